"""Decoding steps against the roofline: ``python -m tspd bench-step --out results/gpu/{device}.json`` (run by
``scripts/gpu_speed.sh`` on a GPU) writes ``results/gpu/<device>.json``; the step-speed page shows them."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tspd.decoding.names import by_slug, slug
from tspd.markdown import table as markdown_table
from tspd.provenance import REPO_ROOT
from tspd.records.device_files import write_device_file
from tspd.records.files import read_json, shown

DIRECTORY = REPO_ROOT / "results" / "gpu"
# The speed goals at LLaDA-8B's shape, batch 1, bf16 (the issues', not the paper's): issue 36 set them for one H100,
# issue 51 asked the full forward at >= 80 % of its matmul floor, <= 28 ms on an H100 and <= 26 ms on an H200.
GOALS = {"H100": {"dual_step_ms": 8.0, "full_forward_ms": 28.0, "control_percent": 1.0},
         "H200": {"dual_step_ms": 8.0, "full_forward_ms": 26.0, "control_percent": 1.0}}
FLOOR_SHARE_GOAL = 0.8   # the full forward's floor over its time, at least
CARDS = ("NVIDIA-H200", "NVIDIA-H100-80GB-HBM3")   # the cards the README and the status page show, as files name them


def goals(device: str) -> dict[str, float]:
    """The goals for the card ``device`` names (an H100's for any other card)."""
    return next((g for card, g in GOALS.items() if card in device), GOALS["H100"])


@dataclass(frozen=True)
class BenchStep:
    """One device's file: its device and dtype and one row per batch size (dicts as stored)."""
    name: str
    device: str
    dtype: str
    rows: list[dict]

    def batch(self, size: int) -> dict:
        return next(r for r in self.rows if r["batch"] == size)


def entry_key(controller: str, ce: bool, cache: str, fast: bool = False) -> str:
    """The key of a decoding's entry in a row's ``generate`` or ``parity``: its slug, then ``/fast`` for the
    CUDA-graph fast path (``tspd+ce/dual/fast``)."""
    return slug(controller, ce, cache) + ("/fast" if fast else "")


def beyond_forwards(row: dict, key: str) -> float | None:
    """What a ``generate`` call of ``row`` spent beyond its forwards, as a fraction of its mean forward, by wall
    clock: its seconds per NFE against the row's own step times, each block's first step a full forward and every
    later one the dual cache's block step (from CUDA graphs on the fast path). Unlike the profiled share, it lets
    the host's work overlap the device's, as decoding does. None where the row lacks those step times, and for
    the prefix cache (its window shrinks) and eager calls (their first steps also write the cache)."""
    g = row["generate"][key]
    *_, cache, fast = decoding_entries({key: g})[key]
    suffix = "_fast" if fast else ""
    full, dual = row.get("full_forward" + suffix), row.get("dual_step" + suffix)
    if not fast or cache == "prefix" or full is None or (cache == "dual" and dual is None):
        return None
    firsts = min(g["nfe"], row["gen"] // row["block"])
    forwards = g["nfe"] * full["seconds"] if cache == "none" else \
        firsts * full["seconds"] + (g["nfe"] - firsts) * dual["seconds"]
    return g["seconds_per_nfe"] * g["nfe"] / forwards - 1


def best_full_forward(row: dict) -> dict:
    """The faster of a row's eager and fast-path full forwards (its ``seconds`` and ``floor_seconds``): what the
    goals judge, since decoding takes the fast path where it is faster."""
    return min((row["full_forward"], row.get("full_forward_fast")), key=lambda s: s["seconds"] if s else float("inf"))


def goal_rows(result: dict) -> list[dict]:
    """Batch 1 at LLaDA-8B's shape against :func:`goals` for the card (``measure``, ``goal``, ``measured``,
    ``met``; ``measured`` None where ``result``, a stored file as a dict, lacks the measurement)."""
    rows = []
    for r in result["rows"]:
        if result["shape"] != "llada-8b" or r["batch"] != 1:
            continue
        dual, full = r.get("dual_step_fast") or r["dual_step"], best_full_forward(r)["seconds"]
        timed, fast_key = r.get("generate", {}), entry_key("tspd", True, "dual", fast=True)
        control = timed.get(fast_key) or timed.get(entry_key("tspd", True, "dual"))
        goal = goals(result["device"])
        for what, at_most, value in [("dual-cache step (ms)", goal["dual_step_ms"], 1e3 * dual["seconds"]),
                                     ("full forward (ms)", goal["full_forward_ms"], 1e3 * full),
                                     ("controller + CE, % of a forward", goal["control_percent"],
                                      None if control is None else 100 * control["control_fraction_of_forward"])]:
            rows.append({"measure": what, "goal": f"at most {at_most:g}", "measured": value,
                         "met": None if value is None else value <= at_most})
        if fast_key in timed and (beyond := beyond_forwards(r, fast_key)) is not None:
            rows.append({"measure": "TSPD + CE beyond its forwards, fast path, % of a forward (wall clock)",
                         "goal": f"at most {goal['control_percent']:g}", "measured": 100 * beyond,
                         "met": 100 * beyond <= goal["control_percent"]})
        share = r["full_forward"]["floor_seconds"] / full
        rows.append({"measure": "full forward, % of its floor", "goal": f"at least {100 * FLOOR_SHARE_GOAL:g}",
                     "measured": 100 * share, "met": share >= FLOOR_SHARE_GOAL})
    return rows


def decoding_entries(entries: dict) -> dict[str, tuple[str, bool, str, bool]]:
    """Key -> ``(controller, ce, cache, fast)`` of each of ``entries`` (a row's ``generate`` or ``parity``) that is a
    decoding's, in stored order: found among the keys :func:`entry_key` makes (a parity row's
    ``dual_step_max_abs_logit_diff`` is none of them)."""
    known = {entry_key(p, ce, cache, fast): (p, ce, cache, fast)
             for p, ce, cache in by_slug().values() if cache is not None for fast in (False, True)}
    return {k: known[k] for k in entries if k in known}


def load(device: str, directory: str | Path | None = None) -> BenchStep:
    """``results/gpu/<device>.json`` (``device`` as its file names it, e.g. ``NVIDIA-H200``)."""
    d = read_json(Path(directory or DIRECTORY) / f"{device}.json")
    return BenchStep(f"{device}.json", d["device"], d["dtype"], d["rows"])


def load_all(directory: str | Path | None = None) -> list[tuple[Path, dict]]:
    return [(p, read_json(p)) for p in sorted(Path(directory or DIRECTORY).glob("*.json"))]


def card_table(labels: list[str], columns: dict[str, list[str]]) -> str:
    """A Markdown table with a row per label and a column per card (``columns``: header -> its cells in the labels'
    order)."""
    return "\n".join(markdown_table(["", *columns], [[label, *(c[i] for c in columns.values())]
                                                     for i, label in enumerate(labels)]))


SPEED_ROWS = ["setting (LLaDA-8B's shape, batch 1)", "dual-cache step, fast path, ms", "dual-cache step, eager, ms",
              "full forward, ms", "full forward against its roofline floor",
              "fast path decodes as the eager loop (same tokens, same NFE)",
              "controller + CE, % of a fast-path forward (profiled, dual cache)",
              "beyond its forwards, % of a forward (wall clock, fast path, dual cache)", "record"]


def _per_decoding(values: dict[str, float]) -> str:
    return ", ".join(f"{name} {v:.1f}" for name, v in values.items()) or "-"


def speed_cells(rec: BenchStep) -> list[str]:
    """A card's column of :func:`speed_table`, a cell per :data:`SPEED_ROWS` (a dash where the file lacks it)."""
    row, goal = rec.batch(1), goals(rec.device)
    ms = lambda step: f"{1e3 * row[step]['seconds']:.2f}" if row.get(step) else "-"   # noqa: E731
    timed, checked = decoding_entries(row.get("generate", {})), decoding_entries(row.get("parity", {}))
    dual = {k: slug(p, ce) for k, (p, ce, cache, fast) in timed.items() if cache == "dual" and fast}
    control = {name: 100 * row["generate"][k]["control_fraction_of_forward"] for k, name in dual.items()}
    beyond = {name: 100 * b for k, name in dual.items() if (b := beyond_forwards(row, k)) is not None}
    same = all(row["parity"][k]["same_tokens"] and row["parity"][k]["same_nfe"] for k in checked)
    parity = (f"{'yes' if same else 'NO'}: {', '.join(dict.fromkeys(slug(p, ce) for p, ce, *_ in checked.values()))}; "
              f"cache {' and '.join(dict.fromkeys(c for _, _, c, _ in checked.values()))}") if checked else "-"
    full, floor = best_full_forward(row)["seconds"], row["full_forward"]["floor_seconds"]
    launches = f" ({row['dual_step']['kernels']:,} kernel launches)" if row["dual_step"].get("kernels") else ""
    return [f"{rec.dtype}, prompt {row['prompt']} + {row['gen']}, block {row['block']}",
            f"{ms('dual_step_fast')} (goal {goal['dual_step_ms']:g})", ms("dual_step") + launches,
            f"{1e3 * full:.2f} (goal {goal['full_forward_ms']:g})",
            f"{100 * floor / full:.0f} % of it (floor {1e3 * floor:.2f} ms; goal {100 * FLOOR_SHARE_GOAL:.0f} %)",
            parity, f"{_per_decoding(control)} (goal {goal['control_percent']:g})", _per_decoding(beyond),
            f"`{shown(DIRECTORY / rec.name)}`"]


def speed_table(cards: tuple[str, ...] = CARDS, directory: str | Path | None = None) -> str:
    """Batch 1 at LLaDA-8B's shape on each card of ``cards`` with a file, against its goals (:func:`goals`)."""
    found = [load(card, directory) for card in cards if (Path(directory or DIRECTORY) / f"{card}.json").is_file()]
    return card_table(SPEED_ROWS, {rec.device: speed_cells(rec) for rec in found})


def save(result: dict, template: str) -> Path:
    return write_device_file(result, template)
