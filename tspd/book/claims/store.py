"""Where each notebook's verdicts are kept, and the "What reproduces" page that reads them.

A notebook that tests a claim ends with ``claims.report(NOTEBOOK, task, claim)``: it prints the claim,
its verdict and each finding (the cell nbval checks), and writes ``results/claims/<notebook>.json``
(findings only: verdicts are always recomputed from the intervals; no time or revision in the file, so
rerunning an unchanged notebook rewrites it byte for byte). The page reads every file
(:func:`load_all`); a test checks that each file says what its notebook's stored output says, so a file
cannot drift from the runs the notebook measured.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tspd.records.files import write_text_atomic
from tspd.book.claims.stats import FAILS, HOLDS, OPEN, Claim
from tspd.provenance import REPO_ROOT

CLAIMS_DIR = REPO_ROOT / "results" / "claims"

# The paper's claims this project tests, in the page's order: notebook -> (where, the claim).
NOTEBOOKS = {
    "figure01_flip_rate": ("Fig. 1", "Within a confidence bin, unstable traces flip more often than stable ones."),
    "figure02_position_stabilization": ("Fig. 2", "Tokens further right stabilise later."),
    "figure03_lookahead": ("Fig. 3/4", "A share of tokens is extrapolable: CE commits them earlier than a threshold."),
    "table01_main_results": ("Table 1", "TSPD + CE is faster than Fast-dLLM, CD, Prophet and Learn2PD at no more "
                                        "than 1 point lower accuracy than vanilla: a better speed-accuracy trade-off "
                                        "(also read as AUP)."),
    "table02_other_backbones": ("Table 2", "The same on other backbones (Dream, LLaDA-MoE): the method is not "
                                           "specific to LLaDA."),
    "table04_kv_cache": ("Table 4", "TSPD + CE composes with prefix and dual caches."),
    "table05_module_ablation": ("Table 5", "CE adds speed on top of TSPD; TSPD beats a confidence threshold."),
    "table06_controller_architecture": ("Table 6", "The 2-layer LSTM is on the speed-accuracy front of the "
                                                   "alternatives."),
    "table07_feature_ablation": ("Table 7", "Removing any feature costs accuracy or speed."),
    "table08_parameter_budget": ("Table 8", "The default budget is on the speed-accuracy front of the others."),
    "table09_collection_policy": ("Table 9", "EGP traces beat standard-policy traces."),
    "table10_data_scale": ("Table 10", "The controller is insensitive to data scale."),
    "table11_data_distribution": ("Table 11", "The controller is insensitive to the difficulty mix."),
    "table12_ce_hyperparameters": ("Table 12", "Smaller tau or larger H is faster and less accurate."),
    "table13_ce_controllers": ("Table 13", "CE speeds up every controller it is added to."),
}


def path(notebook: str, claims_dir: str | Path | None = None) -> Path:
    return Path(claims_dir or CLAIMS_DIR) / f"{notebook}.json"


def lines(notebook: str, claims: dict[str, Claim]) -> list[str]:
    """What a notebook's verdict cell prints: per task, the claim, its verdict and its evidence."""
    if not claims:
        return ["nothing judged: no run of the kind this claim is about (the page: not measured)"]
    out = []
    for task, claim in claims.items():
        out.append(f"task {task}:")
        out += claim.lines("  ")
    return out


def beside(results_dir: str | Path | None) -> Path | None:
    """Where a notebook given ``results_dir`` (its runs kept elsewhere) keeps its verdicts: ``claims/``
    beside that folder, so that a run on another model never rewrites the repository's record; None (the
    repository's ``results/claims``) when it is not given."""
    return Path(results_dir).expanduser().parent / "claims" if results_dir else None


def report(notebook: str, claims: dict[str, Claim], claims_dir: str | Path | None = None) -> None:
    """Print the verdicts of ``{task: Claim}`` and keep them in ``<claims_dir>/<notebook>.json`` (default
    ``results/claims``; a notebook passes :func:`beside` its ``results_dir``)."""
    if notebook not in NOTEBOOKS:
        raise ValueError(f"unknown claim notebook {notebook!r}; add it to tspd.book.claims.store.NOTEBOOKS")
    print("\n".join(lines(notebook, claims)))
    text = json.dumps({"notebook": notebook, "claims": {t: c.to_dict() for t, c in claims.items()}},
                      indent=1, ensure_ascii=False) + "\n"
    p = path(notebook, claims_dir)
    if not p.exists() or p.read_text() != text:
        write_text_atomic(p, text)


def load(notebook: str, claims_dir: str | Path | None = None) -> dict[str, Claim] | None:
    """``{task: Claim}`` stored by ``notebook``, or None if it has not been run."""
    p = path(notebook, claims_dir)
    if not p.exists():
        return None
    return {t: Claim.from_dict(d) for t, d in json.loads(p.read_text())["claims"].items()}


def load_all(claims_dir: str | Path | None = None) -> dict[str, dict[str, Claim] | None]:
    return {nb: load(nb, claims_dir) for nb in NOTEBOOKS}


def page_rows(stored: dict[str, dict[str, Claim] | None]) -> list[dict]:
    """One row per claim and task for the page; a notebook not run yet gives a row without a verdict."""
    rows = []
    for nb, (where, text) in NOTEBOOKS.items():
        got = stored.get(nb)
        if not got:
            rows.append({"where": where, "claim": text, "task": "", "verdict": "not measured", "evidence": "",
                         "notebook": nb})
            continue
        for task, claim in got.items():
            fs = claim.findings()
            n = sorted({f.n for f in fs})
            rows.append({"where": where, "claim": text, "task": task, "verdict": claim.verdict,
                         "n": "/".join(map(str, n)),
                         "evidence": "; ".join(f"[{f.verdict}] {f.quantity} {f.shown}" for f in fs),
                         "notebook": nb})
    return rows


def tally(rows: list[dict]) -> dict[str, int]:
    """How many claims hold, do not hold, are inconclusive, or were not measured."""
    c = Counter(r["verdict"] for r in rows)
    return {k: c.get(k, 0) for k in (HOLDS, FAILS, OPEN, "not measured")}
