"""The step-speed page's view of ``python -m tspd bench-loop``: what a decoding step costs beyond its
forward (paper Section 5.4), read back from the committed ``results/bench/loop-*.json`` files.

Section 5.4 prices the controller and CE as a fraction of one forward. A bench-loop file holds, per
(controller, CE, cache) setting, the bare forward's time, everything else a ``generate`` call spends as a
fraction of its forwards (``rest_of_forward``, against its budget in ``tspd.bench.loop.OVERHEAD_BUDGETS``
where it has one) and the split of the step's own work by phase. :func:`loop_rows` turns one file into table rows,
:func:`loop_caption` says where it came from, :func:`draw_loop` draws the shares against their targets.
"""
from __future__ import annotations

from pathlib import Path

from tspd.bench.loop import share_text
from tspd.decoding.names import display_name

# the step's own work by phase, as bench-loop names it, and the column each is shown under
PHASE_COLUMNS = {"statistics_view_commit": "statistics + view + commit (%)", "controller": "controller (%)",
                 "ce": "CE (%)"}


def loop_results(directory: str | Path | None = None) -> list[tuple[Path, dict]]:
    """Every bench-loop file under ``directory`` (default the committed ones, :mod:`tspd.bench.loop`)."""
    from tspd.bench import loop as bench_loop
    return bench_loop.load_all(directory)


def loop_rows(result: dict) -> list[dict]:
    """One table row per setting of a bench-loop result: the forward's ms, the rest of a step as a
    percentage of its forward beside its target (None where ``OVERHEAD_BUDGETS`` sets none), and the step's own
    work split by phase (percentages of the forward; without the call's setup, so they sum below it)."""
    rows = []
    for r in result["rows"]:
        target = r.get("target")
        row = {"controller": r["policy"], "CE": r["ce"], "cache": r["cache"], "forward ms": r["forward_ms"],
               "rest of a step (% of forward)": (100 * r["rest_of_forward"] if target is None   # 5.04 beside 5.0
                                                 else share_text(r["rest_of_forward"], target)),
               "target (%)": None if target is None else 100 * target, "met": r.get("meets_target")}
        phases = r.get("phases_of_forward", {})
        row.update({column: 100 * phases[name] if name in phases else None for name, column in PHASE_COLUMNS.items()})
        if not r["ce"]:
            row[PHASE_COLUMNS["ce"]] = None                        # no CE ran: nothing to split off
        rows.append(row)
    return rows


def loop_caption(path: str | Path, result: dict) -> str:
    """Where a bench-loop file came from: file, device, threads, torch, revision, window, prompts, command."""
    return (f"{Path(path).name}: {result['device']}, torch {result['torch']}, {result['threads']} thread(s), "
            f"revision {result['revision']}, {result['model']}, gen {result['gen_length']} / block "
            f"{result['block_length']}, batch {result['batch']}, {result['prompts']}, {result['repeats']} "
            f"repetitions. Command: {result['command']}")


def draw_loop(result: dict, title: str = ""):
    """The rest of a step (% of its forward) per setting as a bar: its profiled phases, then in grey
    what the whole-call timing adds to them (the call's setup, and noise: the two come from different
    decodings, so a bar whose phases exceed the timed share has no grey), each target as a tick."""
    import matplotlib.pyplot as plt

    rows = result["rows"]
    fig, ax = plt.subplots(figsize=(9.5, 0.28 * len(rows) + 1.2))
    ys = range(len(rows))
    left = [0.0] * len(rows)
    for name, column in PHASE_COLUMNS.items():
        widths = [100 * r.get("phases_of_forward", {}).get(name, 0.0) for r in rows]
        ax.barh(list(ys), widths, left=left, label=column.replace(" (%)", ""))
        left = [a + w for a, w in zip(left, widths)]
    rest = [max(100 * r["rest_of_forward"] - a, 0.0) for r, a in zip(rows, left)]
    ax.barh(list(ys), rest, left=left, color="0.8", label="the rest of the timed share\n(call setup, and the forwards'\nslowdown between steps)")
    for y, r in zip(ys, rows):
        if r.get("target") is not None:
            ax.plot([100 * r["target"]] * 2, [y - 0.45, y + 0.45], color="k", lw=1.5)
    ax.plot([], [], color="k", lw=1.5, label="target")
    ax.set_yticks(list(ys), [display_name(r["policy"], r["ce"], r["cache"]) for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("beyond the forward, % of the forward's time", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title:
        ax.set_title(title, fontsize=8)
    fig.tight_layout()
    return fig


__all__ = ["PHASE_COLUMNS", "loop_results", "loop_rows", "loop_caption", "draw_loop"]
