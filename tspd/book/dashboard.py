"""The status page's dashboard: one table for the zoo against LLaDA-8B's regime, written from the records.

A row per zoo model with a regime record (``regime.json``) and, where it has one, a dynamics record
(``dynamics.json``): vanilla's accuracy, what 2 / 4 / 8 tokens per step lose, Fast-dLLM 0.9's TPF, how many of the
regime bands (:data:`tspd.measures.regime.REGIME_TARGETS`) its intervals meet, and the dynamics of Section 3 (right but
unsure, Fig. 1's gap, rises before 0.9); LLaDA-8B-Instruct's row last, its numbers labelled as theirs
(``tspd/reported.json``). ``python -m tspd fill-records`` writes it into the page (span ``status-dashboard``).
"""
from __future__ import annotations

from tspd import markdown
from tspd.measures.regime import ANCHORS, FIXED_ANCHORS, FIXED_TARGETS, targets
from tspd.models.loading import ZOO
from tspd.records import dynamics as dynamics_file, regime as regime_file

COLUMNS = ["model (task)", "n (window)", "vanilla, %", "2 / 4 / 8 tokens a step lose, points", "Fast-dLLM 0.9 TPF",
           "regime bands met", "right but unsure, %", "Fig. 1's gap, points", "rise before 0.9, %", "records"]


def _fixed(found: dict) -> str:
    return " / ".join(f"{found[key]['value']:.1f}" if key in found else "-" for key in FIXED_TARGETS.values())


def _dynamics(model: str) -> list[str]:
    record = dynamics_file.load(model)
    if record is None:
        return ["", "", ""]
    s = record["summary"]
    return [f"{s[k]['value']:.1f}" if s.get(k) else "-" for k in ("unsure", "flip_gap", "rise_crossed")]


def zoo_rows() -> list[list[str]]:
    """A row per zoo model with a regime record, then LLaDA-8B-Instruct's (theirs)."""
    rows = []
    for name in sorted(p.name for p in ZOO.iterdir() if p.is_dir()):
        rec = regime_file.load(name)
        if rec is None:
            continue
        found = targets(rec.data)
        by_key = {t["target"]: t for t in found}
        task = rec.data.get("task", "").rsplit(".", 1)[-1]
        rows.append([f"`{name}` ({task})", f"{rec.data['rows']['vanilla']['n']} ({rec.data['gen_length']})",
                     f"{by_key['vanilla']['value']:.1f}", _fixed(by_key), f"{by_key['fast_tpf']['value']:.2f}",
                     f"{sum(t['met'] for t in found)} of {len(found)}", *_dynamics(name),
                     f"`tspd/zoo/{name}/regime.json`"])
    llada = " / ".join(f"{FIXED_ANCHORS[1] - FIXED_ANCHORS[k]:.1f}" for k in FIXED_TARGETS)
    rows.append(["LLaDA-8B-Instruct, GSM8K (theirs)", "(256)", f"{FIXED_ANCHORS[1]:g}", llada, f"{ANCHORS['fast_tpf'][0]:g}",
                 "", "", "", "", "`tspd/reported.json`"])
    return rows


def zoo_table() -> str:
    """The dashboard's zoo table as Markdown, between blank lines (a span of its own)."""
    return "\n\n" + "\n".join(markdown.table(COLUMNS, zoo_rows())) + "\n\n"


__all__ = ["COLUMNS", "zoo_rows", "zoo_table"]
