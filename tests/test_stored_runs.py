"""Committed run files (``results/runs``) must be what the current code decodes.

The notebooks read their runs back from ``results/runs`` instead of recomputing them. A change to the
decoder, a controller or the checkpoint that alters what a run would produce must therefore show up
here: for several committed runs (different controllers, CE and caches) the first samples are
recomputed with the current code and must give exactly the stored text and NFE.
"""
from __future__ import annotations

import json
import shutil

import pytest

from tspd.eval import experiments
from tspd.eval.experiments import REPO_ROOT, RunConfig

RUNS = REPO_ROOT / "results" / "runs"
N = 2   # samples recomputed per run


def _metas() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(RUNS.glob("*.json")) if not p.name.endswith(".summary.json")]


def picked_runs(k: int = 5) -> list[dict]:
    """Up to ``k`` committed embedded-model runs with distinct (policy, CE, cache), vanilla first."""
    seen, out = set(), []
    metas = [m for m in _metas() if m["config"].get("model") == "tiny-arith" and (RUNS / f"{m['key']}.jsonl").exists()]
    metas.sort(key=lambda m: (m["config"]["policy"] != "vanilla", m["key"]))
    for m in metas:
        c = m["config"]
        kind = (c["policy"], c["ce"], c["cache"])
        if kind not in seen:
            seen.add(kind)
            out.append(m)
    return out[:k]


def mismatches(meta: dict, results_dir, scratch) -> list[str]:
    """Recompute the first ``N`` samples of a stored run in ``scratch``; what differs from the stored rows."""
    config = RunConfig.from_dict({**meta["config"], "limit": N})
    assert config.key == meta["key"], "the run key derivation changed: recompute the committed runs"
    stored = {}
    for line in (results_dir / f"{meta['key']}.jsonl").read_text().splitlines():
        row = json.loads(line)
        stored[row["id"]] = row
    fresh = experiments.run(config, progress=False, results_dir=scratch)
    out = []
    for row in fresh.samples:
        old = stored.get(row["id"])
        if old is None:
            out.append(f"{row['id']}: not stored")
        elif (old["output"], old["nfe"]) != (row["output"], row["nfe"]):
            out.append(f"{row['id']}: stored nfe {old['nfe']} {old['output']!r}, now nfe {row['nfe']} {row['output']!r}")
    return out


def test_runs_are_committed():
    assert len(picked_runs()) >= 4, f"expected committed runs of several controllers in {RUNS}"


@pytest.mark.parametrize("meta", picked_runs(), ids=lambda m: "{policy}{ce}-{cache}".format(
    policy=m["config"]["policy"], ce="+ce" if m["config"]["ce"] else "", cache=m["config"]["cache"]))
def test_committed_run_reproduces(meta, tmp_path):
    assert mismatches(meta, RUNS, tmp_path) == []


def test_an_edited_run_file_is_caught(tmp_path):
    meta = picked_runs(1)[0]
    rows = (RUNS / f"{meta['key']}.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    first["output"] = first["output"] + " edited"
    (tmp_path / f"{meta['key']}.jsonl").write_text("\n".join([json.dumps(first)] + rows[1:]) + "\n")
    shutil.copy(RUNS / f"{meta['key']}.json", tmp_path / f"{meta['key']}.json")
    found = mismatches(meta, tmp_path, tmp_path / "fresh")
    assert len(found) == 1 and first["id"] in found[0]
