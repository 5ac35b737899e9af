"""The speed-accuracy page's numbers: each controller's threshold sweep as TPF-accuracy points, its AUP
with a 95 % interval, and the record a test recomputes from the stored runs.

A sweep is one controller under one KV cache at several settings of its knob; each setting is one
stored run (:mod:`tspd.eval.experiments`), and its point is (TPF, accuracy %) of the run's rows
(:func:`tspd.eval.aup.point`). AUP (:mod:`tspd.eval.aup`, the d3LLM leaderboard's score) is computed
per sweep with ``y_max`` the best accuracy of any run of the task on the page (vanilla included), and
its interval by resampling the problems once for every run of the task (percentile bootstrap; the
runs share their problems, so every point keeps its pairing). :func:`write` keeps the points, the
runs' keys and the AUPs in ``results/pareto.json`` (no time, no revision: an unchanged page rewrites
it byte for byte); ``tests/test_aup.py`` recomputes them from the runs' stored rows.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from tspd.book.claims.runs import _paired, point_series, sweep_aups
from tspd.decoding.names import display_name
from tspd.eval.aup import ALPHA, DROP, aups, forwards_at, point
from tspd.provenance import REPO_ROOT
from tspd.records import runs as run_files
from tspd.records.files import read_json
from tspd.stats import joint_bootstrap

RECORD = REPO_ROOT / "results" / "pareto.json"
REFERENCE = display_name("tspd", True)   # the controller every other is divided by in the ratio column, cache by cache
Sweeps = Mapping[tuple[str, str], Sequence[tuple[object, object]]]   # (controller, cache) -> [(setting, RunResult)]


def name(controller: str, cache: str) -> str:
    """A sweep's name in the record: ``TSPD + CE / dual`` (controller / KV cache)."""
    return f"{controller} / {cache}"


def record_path(results_dir: str | None) -> Path:
    """Where the page keeps its record: ``results/pareto.json``, or ``<results_dir>/pareto.json``."""
    return Path(results_dir).expanduser().resolve() / "pareto.json" if results_dir else RECORD


def sweep_points(sweeps: Sweeps) -> dict[tuple[str, str], list[dict]]:
    """``{(controller, cache): [(setting, RunResult)]}`` -> ``{(controller, cache): [{setting, key, tpf, accuracy}]}``
    by TPF."""
    out = {}
    for sweep, runs in sweeps.items():
        pts = []
        for setting, r in runs:
            rho, acc = point(r.samples)
            pts.append({"setting": setting, "key": r.key, "tpf": rho, "accuracy": acc})
        out[sweep] = sorted(pts, key=lambda p: p["tpf"])
    return out


def sweep_aup(sweeps: Sweeps, reference: str | None = REFERENCE, n_boot: int = 2000, seed: int = 0,
              level: float = 0.95) -> dict[tuple[str, str], dict]:
    """Per sweep, (controller, cache): ``aup`` and its interval ``lo`` / ``hi``, ``y_max`` of all sweeps, and
    where the ``reference`` controller has a sweep under the same cache, ``ratio`` = AUP / the reference's
    AUP with its interval."""
    names = list(sweeps)
    runs = [r for m in names for _, r in sweeps[m]]
    for r in runs[1:]:
        _paired(runs[0], r)
    sizes = [len(sweeps[m]) for m in names]
    series = [point_series(r) for r in runs]

    def split(xs):
        it = iter(xs)
        return {m: [next(it) for _ in range(k)] for m, k in zip(names, sizes)}

    value = sweep_aups(split(series))
    rng = np.random.default_rng(seed)
    n = len(series[0])
    boots = []
    for idx in rng.integers(0, n, size=(n_boot, n)):
        boots.append(sweep_aups(split([x[idx] for x in series])))
    tail = 100 * (1 - level) / 2
    y_max = max(p["accuracy"] for pts in sweep_points(sweeps).values() for p in pts)
    out = {}
    for m in names:
        got = np.array([b[m] for b in boots])
        lo, hi = np.percentile(got, [tail, 100 - tail])
        out[m] = {"aup": value[m], "lo": float(lo), "hi": float(hi), "y_max": y_max}
        ref = (reference, m[1]) if reference else None
        if ref in value and value[ref] > 0:
            ratios = got / np.maximum(np.array([b[ref] for b in boots]), 1e-12)
            rlo, rhi = np.percentile(ratios, [tail, 100 - tail])
            out[m].update(ratio=value[m] / value[ref], ratio_lo=float(rlo), ratio_hi=float(rhi))
    return out


def record(model: str, n: int, tasks: Mapping[str, Sweeps], seed: int = 0) -> dict:
    """The page's record: per task, every sweep's points (with their runs' keys) and AUP, under its
    :func:`name`."""
    out = {"notebook": "pareto", "model": model, "n": n, "alpha": ALPHA, "drop": DROP, "seed": seed, "tasks": {}}
    for task, sweeps in tasks.items():
        points = sweep_points(sweeps)
        scores = sweep_aup(sweeps, seed=seed)
        out["tasks"][task] = {name(*m): {"points": points[m], **scores[m]} for m in sweeps}
    return json.loads(json.dumps(out))


def write(rec: dict, path: str | Path = RECORD) -> None:
    """Keep the record (rewritten only when it changed)."""
    path = Path(path)
    text = json.dumps(rec, indent=1, ensure_ascii=False) + "\n"
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def recomputed_aups(task_record: Mapping[str, dict]) -> dict[str, float]:
    """AUP of every sweep of one task from its recorded points (what a test compares with the record)."""
    return aups({m: [(p["tpf"], p["accuracy"]) for p in s["points"]] for m, s in task_record.items()})


def equal_accuracy(path: str | Path = RECORD, method: str = REFERENCE, reference: str = "Fast-dLLM",
                   setting: float = 0.9, cache: str = "none", n_boot: int = 2000, seed: int = 0) -> dict | None:
    """A Pareto record's ``method`` at ``reference``'s accuracy (its ``setting``): the forwards ``method``'s sweep
    needs to reach that accuracy (:func:`tspd.eval.aup.forwards_at`) over ``reference``'s forwards, with a 95 %
    interval over the problems resampled for every run at once; ``inf`` where the sweep never reaches it (in a
    resample, too: the interval's top is then ``inf``). The runs' rows are read beside the record or from the
    book's ``results/runs``; None where the record lacks either sweep or a run's rows."""
    path = Path(path)
    rec = read_json(path)
    (task, sweeps), = rec["tasks"].items()
    ref = next((p for p in sweeps.get(name(reference, cache), {}).get("points", []) if p["setting"] == setting), None)
    ours = sweeps.get(name(method, cache), {}).get("points", [])
    keys = [ref["key"]] + [p["key"] for p in ours] if ref and ours else []
    folders = [path.parent if run_files.rows_file(k, path.parent).exists() else None for k in keys]
    rows = [run_files.stored(k, f) for k, f in zip(keys, folders)]
    if not rows or not all(rows):
        return None
    ids = sorted(set.intersection(*(set(r) for r in rows)))
    right = [[bool(r[i]["correct"]) for r in rows] for i in ids]    # a row per problem, a column per run
    nfe = [[r[i]["nfe"] for r in rows] for i in ids]

    def ratio(right, nfe):
        acc, fwd = 100 * right.mean(0), nfe.mean(0)
        return forwards_at(zip(fwd[1:], acc[1:]), acc[0]) / fwd[0]

    value, lo, hi = joint_bootstrap([right, nfe], ratio, n_boot, seed, method="inverted_cdf")
    return {"model": rec["model"], "task": task, "n": len(ids), "value": value, "lo": lo, "hi": hi,
            "reference": f"{reference} {setting:g}", "reference_accuracy": 100 * float(np.mean(right, 0)[0]),
            "reference_forwards": float(np.mean(nfe, 0)[0]), "method": method, "record": str(path)}


def sweep_ratios() -> dict[str, dict]:
    """Per model with a Pareto record (the book's ``results/pareto.json``, a training record's
    ``results/training/*/pareto/pareto.json``): TSPD + CE's forwards at Fast-dLLM 0.9's accuracy along its gate
    sweep, over Fast-dLLM's (:func:`equal_accuracy`): what :func:`tspd.book.regime.premise_map` places."""
    out = {}
    for path in [RECORD, *sorted((REPO_ROOT / "results" / "training").glob("*/pareto/pareto.json"))]:
        got = equal_accuracy(path) if path.is_file() else None
        if got:
            out.setdefault(got["model"], got)
    return out


__all__ = ["RECORD", "REFERENCE", "Sweeps", "equal_accuracy", "sweep_ratios", "name", "record_path", "sweep_points", "sweep_aup", "record", "write", "recomputed_aups"]
