"""The status page's dashboard: one table for the zoo against LLaDA-8B's regime, written from the records.

A row per zoo model with a regime record (``regime.json``): vanilla's accuracy, what 2 / 4 / 8 tokens per step lose,
Fast-dLLM 0.9's TPF and how many of the regime bands (:data:`tspd.measures.regime.REGIME_TARGETS`) its intervals meet,
and how many more its values alone (at n = 200 a band of 2 points is narrower than an interval);
LLaDA-8B-Instruct's row last, its numbers labelled as theirs (``tspd/reported.json``). Each row's record is
``tspd/zoo/<model>/regime.json``. Each model's every target is
:func:`tspd.book.regime.targets_table`; the zoo's dynamics, :func:`tspd.measures.dynamics.zoo_dynamics_table`.
``python -m tspd fill-records`` writes it into the page (span ``status-dashboard``).
"""
from __future__ import annotations

from tspd import markdown
from tspd.measures.regime import ANCHORS, FIXED_ANCHORS, FIXED_TARGETS, load, targets
from tspd.models.loading import ZOO

COLUMNS = ["model (task)", "n (window)", "vanilla, %", "2 / 4 / 8 tokens a step lose, points", "Fast-dLLM 0.9 TPF",
           "regime bands: met / point only, of"]


def _fixed(found: dict) -> str:
    return " / ".join(f"{found[key]['value']:.1f}" if key in found else "-" for key in FIXED_TARGETS.values())


def _bands(found: list[dict]) -> str:
    """``met / point only, of all``: bands the whole interval meets, then those only the value meets."""
    met = sum(t["met"] for t in found)
    return f"{met} / {sum(t['point_met'] for t in found) - met} of {len(found)}"


def zoo_rows() -> list[list[str]]:
    """A row per zoo model with a regime record, then LLaDA-8B-Instruct's (theirs)."""
    rows = []
    for name in sorted(p.name for p in ZOO.iterdir() if p.is_dir()):
        rec = load(name)
        if rec is None:
            continue
        found = targets(rec.data)
        by_key = {t["target"]: t for t in found}
        task = rec.data.get("task", "").rsplit(".", 1)[-1]
        rows.append([f"`{name}` ({task})", f"{rec.data['rows']['vanilla']['n']} ({rec.data['gen_length']})",
                     f"{by_key['vanilla']['value']:.1f}", _fixed(by_key), f"{by_key['fast_tpf']['value']:.2f}",
                     _bands(found)])
    llada = " / ".join(f"{FIXED_ANCHORS[1] - FIXED_ANCHORS[k]:.1f}" for k in FIXED_TARGETS)
    rows.append(["LLaDA-8B-Instruct, GSM8K (theirs)", "(256)", f"{FIXED_ANCHORS[1]:g}", llada, f"{ANCHORS['fast_tpf'][0]:g}",
                 ""])
    return rows


def zoo_table() -> str:
    """The dashboard's zoo table as Markdown."""
    return "\n".join(markdown.table(COLUMNS, zoo_rows()))


__all__ = ["COLUMNS", "zoo_rows", "zoo_table"]
