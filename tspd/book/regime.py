"""The Regime page's tables and figures (beyond the paper): is an embedded model in the regime the paper studies?

Each target of a checkpoint's regime record (:mod:`tspd.measures.regime`, which measures and keeps it) with its 95 %
interval, the bound, and LLaDA-8B-Instruct's value where a source gives one (:func:`target_rows`,
:func:`targets_table`, :func:`regime_figure`), and accuracy against tokens per step (:func:`parallel_table`,
:func:`parallel_figure`; the README's picture, :func:`readme_figure`). LLaDA-8B's anchors are theirs
(:data:`tspd.measures.regime.ANCHORS`), labelled so.
"""
from __future__ import annotations

from pathlib import Path

from tspd.decoding.names import display_name
from tspd.markdown import table as markdown_table
from tspd.measures.dynamics import TARGETS as DYNAMICS_TARGETS
from tspd.measures.dynamics import equal_accuracy_ratio, interval_cell
from tspd.measures.regime import (FIXED_ANCHORS, REGIME_TARGETS, SCHEDULE_TARGETS, THRESHOLD_ANCHOR, THRESHOLD_TARGETS,
                                  RegimeConfig, load, met_word, plan, targets)
from tspd.models.loading import DEFAULT_MODEL, ZOO
from tspd.provenance import REPO_ROOT
from tspd.records.files import shown
from tspd.stats import wilson


def _target_row(t: dict) -> dict:
    """A target of :func:`targets` as the page shows it: ours with its interval, the bound, met or not, LLaDA-8B's
    value (theirs)."""
    a = t["anchor"]
    return {"figure": t["what"], "ours": round(t["value"], 2),
            "95 % interval": "" if t["lo"] == t["hi"] else f"{t['lo']:.1f} to {t['hi']:.1f}", "target": t["band"],
            "met": met_word(t), "LLaDA-8B-Instruct (theirs)": "" if a is None else a[0]}


def target_rows(record: dict) -> list[dict]:
    """One row per target: ours with its interval, the bound, met or not, LLaDA-8B's value (theirs)."""
    return [_target_row(t) for t in targets(record)]


def targets_table(model: str = DEFAULT_MODEL) -> str:
    """The model's regime targets (:func:`target_rows`) with each figure's n, and the record; a dashed row where the
    model has no record."""
    rec = load(model)
    head = f"`{Path(str(model)).name}`" + (f", window {rec.gen_length} / block {rec.block_length}" if rec else "")
    header = [head, "ours", "95 % interval", "n", "target", "met", "LLaDA-8B-Instruct (theirs)"]
    if rec is None:
        return "\n".join(markdown_table(header, [["no regime record yet", "-", "-", "-", "-", "-", "-"]]))
    rows = []
    for t in targets(rec.data):
        r = _target_row(t)
        n = rec.rows[f"vanilla_{t['window']}"]["n"] if t["target"] == "long_gap" else rec.n
        what = (f"the {t['cache']} cache costs {display_name(t['controller'], t['ce'])}, points"
                if t["target"] == "cache_cost" else r["figure"])
        rows.append([what, f"{t['value']:.{2 if t['target'] == 'fast_tpf' else 1}f}", r["95 % interval"], n, r["target"],
                     r["met"], r["LLaDA-8B-Instruct (theirs)"]])
    return "\n".join(markdown_table(header, rows + [["record", f"`{shown(rec.path)}`", "", "", "", "", ""]]))


def targets_side_by_side(records: dict[str, dict]) -> list[dict]:
    """One row per target, a column per model (ours, 95 % interval, met), and LLaDA-8B-Instruct's (theirs)."""
    rows: dict[str, dict] = {}
    for label, record in records.items():
        for t in target_rows(record):
            row = rows.setdefault(t["figure"], {"figure": t["figure"], "target": t["target"]})
            row[label] = f"{t['ours']:g}" + (f" ({t['95 % interval']})" if t["95 % interval"] else "") + f", {t['met']}"
            row["LLaDA-8B-Instruct (theirs)"] = t["LLaDA-8B-Instruct (theirs)"]
    return [{k: r.get(k, "") for k in ("figure", "target", *records, "LLaDA-8B-Instruct (theirs)")} for r in rows.values()]


def parallel_table(records: dict[str, dict]) -> list[dict]:
    """Accuracy (%) at 1, 2, 4, 8 tokens per step, one step per block and Fast-dLLM 0.9 (with its TPF), a row per
    model, and LLaDA-8B-Instruct's row (Fast-dLLM paper, Fig. 5, read from the plot: theirs)."""
    out = []
    for label, record in records.items():
        got = {r["decoding"]: r for r in parallel_rows(record)}
        cell = lambda d: f"{got[d]['accuracy']:.1f}" if d in got else ""   # noqa: E731
        out.append({"model": f"{label} (ours, n = {got['vanilla']['n']})", "1": cell("vanilla"), "2": cell("fixed2"),
                    "4": cell("fixed4"), "8": cell("fixed8"), "one step per block": cell("block_step"),
                    "Fast-dLLM 0.9": cell("fast"), "its TPF": f"{got['fast']['k']:.2f}" if "fast" in got else ""})
    out.append({"model": "LLaDA-8B-Instruct, GSM8K (theirs)", **{str(k): f"{v:g}" for k, v in FIXED_ANCHORS.items()},
                "one step per block": "", "Fast-dLLM 0.9": f"{THRESHOLD_ANCHOR[0]:g}",
                "its TPF": f"{THRESHOLD_ANCHOR[1]:g} (tokens per step)"})
    return out


def regime_figure(record: dict):
    """Five panels of targets: ours (dot, 95 % interval; green where met) against each target's band (green bars,
    shaded where it is met) and LLaDA-8B-Instruct's value (diamond, theirs)."""
    import matplotlib.pyplot as plt

    groups = [("TPF (Fast-dLLM 0.9)", ("fast_tpf",)), ("accuracy, %", ("vanilla",)),
              ("points parallel decoding loses", (*THRESHOLD_TARGETS.values(), *SCHEDULE_TARGETS)),
              ("points a longer window loses", ("long_gap",)), ("points a cache costs", ("cache_cost",))]
    found = targets(record)
    fig, axes = plt.subplots(1, 5, figsize=(16, 3.6), gridspec_kw={"width_ratios": [1, 1, 2, 1, 2.4]})
    for ax, (title, keys) in zip(axes, groups):
        ts = [t for t in found if t["target"] in keys]
        for i, t in enumerate(ts):
            ax.errorbar(i, t["value"], yerr=[[max(t["value"] - t["lo"], 0)], [max(t["hi"] - t["value"], 0)]], fmt="o",
                        color="tab:green" if t["met"] else "tab:red", capsize=3)
            if t["anchor"] is not None:
                ax.plot(i, t["anchor"][0], "D", color="k", ms=6, label="LLaDA-8B (theirs)" if i == 0 else None)
        bounds = [b for t in ts for b in (t["low"], t["high"]) if b is not None]
        top = max([t["hi"] for t in ts] + bounds + [t["anchor"][0] for t in ts if t["anchor"]] + [1.0]) * 1.15
        bottom = min([t["lo"] for t in ts] + [0.0])
        for i, t in enumerate(ts):
            for b in (t["low"], t["high"]):
                if b is not None:
                    ax.hlines(b, i - 0.35, i + 0.35, color="tab:green", lw=1.5)
            ax.fill_between([i - 0.35, i + 0.35], bottom if t["low"] is None else t["low"],
                            top if t["high"] is None else t["high"], alpha=0.12, color="tab:green")
        ax.set_ylim(bottom - 0.05 * (top - bottom), top)
        ax.set_xlim(-0.6, max(len(ts), 1) - 0.4)
        ax.set_xticks(range(len(ts)), [_short(t["what"]) for t in ts], rotation=30, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
            break
    fig.suptitle(f"{record['model']}: dots ours with 95 % intervals (green: target met), bars the bounds (shaded "
                 "where met), diamonds LLaDA-8B-Instruct's own values", fontsize=9)
    fig.tight_layout()
    return fig


def parallel_rows(record: dict) -> list[dict]:
    """Accuracy against tokens per step: vanilla at 1, each fixed schedule, one step per block (its block's
    length), with 95 % intervals; Fast-dLLM 0.9 apart (``k`` its TPF). LLaDA-8B's are :func:`parallel_figure`'s."""
    rows, out = record["rows"], []
    planned = plan(RegimeConfig.from_dict(record["config"]), record["gen_length"], record["block_length"])
    names = [("vanilla", 1)] + sorted(((r.name, r.tokens_per_step) for r in planned if r.kind == "fixed"),
                                      key=lambda x: x[1])
    names += [(r.name, r.tokens_per_step) for r in planned if r.kind == "block_step"]
    for name, k in names + [("fast", None)]:
        if name in rows:
            r = rows[name]
            lo, hi = wilson(r["correct"], r["n"])
            out.append({"decoding": name, "k": r["tpf"] if k is None else k, "accuracy": 100 * r["accuracy"],
                        "lo": 100 * lo, "hi": 100 * hi, "n": r["n"], "fixed": k is not None})
    return out


MODEL_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")


def parallel_figure(records: dict[str, dict]):
    """Accuracy (%) against tokens per step for each model's record, beside LLaDA-8B-Instruct on GSM8K (Fast-dLLM
    paper, Fig. 5, read from the plot: their numbers). Lines: fixed schedules (one step per block at its
    block's length); stars: Fast-dLLM at threshold 0.9, placed at its tokens per forward."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 4))
    for i, (label, record) in enumerate(records.items()):   # every model gets a line, whatever their number
        color = MODEL_COLORS[i % len(MODEL_COLORS)]
        rows = parallel_rows(record)
        fixed = [r for r in rows if r["fixed"]]
        ax.errorbar([r["k"] for r in fixed], [r["accuracy"] for r in fixed], fmt="o-", color=color, capsize=3,
                    yerr=[[r["accuracy"] - r["lo"] for r in fixed], [r["hi"] - r["accuracy"] for r in fixed]],
                    label=f"{label} (ours, n = {fixed[0]['n']})")
        for r in rows:
            if not r["fixed"]:
                ax.plot(r["k"], r["accuracy"], "*", ms=12, color=color)
    ks = sorted(FIXED_ANCHORS)
    ax.plot(ks, [FIXED_ANCHORS[k] for k in ks], "D--", color="k", label="LLaDA-8B-Instruct, GSM8K (Fast-dLLM paper, Fig. 5)")
    ax.plot(THRESHOLD_ANCHOR[1], THRESHOLD_ANCHOR[0], "*", ms=12, color="k")
    ax.set_xscale("log", base=2)
    ticks = sorted({1, 2, 4, 8} | {int(r["k"]) for rec in records.values() for r in parallel_rows(rec) if r["fixed"]})
    ax.set_xticks(ticks, [str(k) for k in ticks])
    ax.set_xlabel("tokens per step (stars: Fast-dLLM 0.9 at its tokens per forward)")
    ax.set_ylabel("accuracy, %")
    ax.set_ylim(-3, 103)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))   # beside: no curve under it
    ax.set_title("What committing several tokens per step costs", fontsize=10)
    fig.tight_layout()
    return fig


def premise_rows(dynamics: dict[str, dict], regimes: dict[str, dict], sweeps: dict[str, dict]) -> list[dict]:
    """Per model with a dynamics record: its 2-tokens-per-step loss (points against vanilla, paired 95 % interval, from
    its regime record in ``regimes``; None where that lacks the row), its right-but-unsure share (% of answer tokens,
    interval over problems) and TSPD + CE's forwards over Fast-dLLM 0.9's at equal accuracy
    (:func:`tspd.measures.dynamics.equal_accuracy_ratio`; ``sweeps``: :func:`tspd.book.pareto.sweep_ratios`)."""
    out = []
    for label, record in dynamics.items():
        regime = regimes.get(label)
        loss = next((t for t in targets(regime) if t["target"] == "fixed2_loss"), None) if regime else None
        ratio, how = equal_accuracy_ratio(label, record, sweeps)
        out.append({"model": label, "loss2": loss and {k: loss[k] for k in ("value", "lo", "hi")},
                    "unsure": record["summary"]["unsure"], "ratio": ratio, "how": how})
    return out


def premise_table(rows: list[dict]) -> list[dict]:
    """:func:`premise_rows` as the page's table, numbered as :func:`premise_map` numbers its points (value [95 %
    interval]; a dash where there is none: a model without a 2-token row is not on the map)."""
    return [{"#": i, "model": r["model"], "2 tokens per step lose, points": interval_cell(r["loss2"]) or "-",
             "right but unsure, %": interval_cell(r["unsure"]),
             "TSPD + CE / Fast-dLLM 0.9 forwards at equal accuracy": interval_cell(r["ratio"], 2) or "-",
             "read": r["how"]} for i, r in enumerate(rows, 1)]


def premise_map(rows: list[dict]):
    """Where on the map of coupling (2 tokens per step's loss) and premise (right but unsure) does TSPD + CE decode in
    fewer forwards than Fast-dLLM 0.9 at its accuracy? Each model of :func:`premise_rows` a point numbered as in
    :func:`premise_table` (where the ratio is read), with both intervals, coloured by the ratio's interval (below 1,
    above 1, or holding 1); a model without a ratio at equal accuracy a grey cross; LLaDA-8B-Instruct's loss
    (Fast-dLLM paper, Fig. 5: theirs; no right-but-unsure share is published for it) a dashed line, inside the band
    the regime targets hold; the dynamics target a dotted line."""
    import matplotlib.pyplot as plt

    def colour(q):
        if q is None:
            return "gray", "not at equal accuracy"
        if q["hi"] < 1:
            return "tab:green", "fewer forwards (interval below 1)"
        if q["lo"] > 1:
            return "tab:red", "more forwards (interval above 1)"
        return "tab:orange", "no difference (interval holds 1)"

    fig, ax = plt.subplots(figsize=(9.0, 5.2))
    band, llada = REGIME_TARGETS["fixed2_loss"], FIXED_ANCHORS[1] - FIXED_ANCHORS[2]
    ax.axvspan(band.low, band.high, color="tab:blue", alpha=0.08, label=f"2-token loss band, {band} points (ours)")
    ax.axvline(llada, color="k", ls="--", lw=1, label=f"LLaDA-8B-Instruct, GSM8K: 2 tokens lose {llada:.1f} (theirs)")
    unsure_target = next(v for k, v, _ in DYNAMICS_TARGETS if k == "unsure")
    ax.axhline(unsure_target, color="k", ls=":", lw=1, label=f"dynamics target: right but unsure >= {unsure_target:g} %")
    seen = set()
    for i, r in enumerate(rows, 1):   # numbered as premise_table numbers them
        if r["loss2"] is None:
            continue
        c, meaning = colour(r["ratio"])
        x, y = r["loss2"], r["unsure"]
        ax.errorbar(x["value"], y["value"], xerr=[[x["value"] - x["lo"]], [x["hi"] - x["value"]]],
                    yerr=[[y["value"] - y["lo"]], [y["hi"] - y["value"]]], fmt="x" if r["ratio"] is None else "o",
                    color=c, ms=7, capsize=2, lw=0.8, label=None if meaning in seen else f"TSPD + CE: {meaning}")
        seen.add(meaning)
        ax.annotate(str(i), (x["value"], y["value"]), xytext=(4, 4), textcoords="offset points", fontsize=8)
    ax.set_xlabel("2 tokens per step lose, points against vanilla (coupling)")
    ax.set_ylabel("right but unsure, % of answer tokens (premise)")
    ax.set_xlim(-5, 105)
    ax.set_ylim(bottom=-2)
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Where does TSPD + CE need fewer forwards than Fast-dLLM 0.9 at its accuracy? (ours; each model's "
                 "own test problems)", fontsize=9, loc="left")
    fig.tight_layout()
    return fig


README_FIGURE = REPO_ROOT / "book" / "figures" / "parallel.png"   # the README's picture (python -m tspd fill-records)


def readme_figure(path: str | Path = README_FIGURE) -> Path:
    """:func:`parallel_figure` of the stored regime records (nothing is measured): the book's model first, then
    every other zoo model with a record of its window, as the Regime page shows them."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    own = load(DEFAULT_MODEL)
    others = {p.name: load(p.name) for p in sorted(ZOO.iterdir()) if p.name != DEFAULT_MODEL}
    records = {DEFAULT_MODEL: own.data} | {name: rec.data for name, rec in others.items() if rec is not None
                                           and (rec.gen_length, rec.block_length) == (own.gen_length, own.block_length)}
    fig = parallel_figure(records)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def _short(what: str) -> str:
    return (what.replace(", points", "").replace("the ", "").replace(" cache costs", "").replace("vanilla accuracy, %",
            "vanilla").replace("tokens per step loses", "tok/step").replace(" loses against", " vs").replace(
            "one step per block loses", "1 step/block").replace("Fast-dLLM 0.9 loses", "Fast-dLLM 0.9"))


__all__ = ["premise_rows", "premise_table", "premise_map", "target_rows", "targets_table", "targets_side_by_side",
           "parallel_rows", "parallel_table", "regime_figure", "parallel_figure", "readme_figure", "README_FIGURE"]
