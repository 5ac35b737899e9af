"""Committed run files (``results/runs``, ``results/controller_table``) must be what the current code decodes.

The notebooks read their runs back from ``results/runs`` instead of recomputing them, and the README's
controller table (``python -m tspd controller-table``) is made from the runs in ``results/controller_table``.
A change to the decoder, a controller or the checkpoint that alters what a run would produce must
therefore show up here: for several committed runs (different controllers, CE and caches) the first
samples are recomputed with the current code and must give exactly the stored text and NFE.
"""
from __future__ import annotations

import json
import shutil

import pytest

from tspd.decoding.names import slug
from tspd.eval import experiments
from tspd.eval.experiments import RunConfig
from tspd.provenance import REPO_ROOT
from tspd.records.rows import ResultsFile
from tspd.models.loading import ZOO

RUNS = REPO_ROOT / "results" / "runs"
TABLE = REPO_ROOT / "results" / "controller_table"   # the runs of python -m tspd controller-table
EMBEDDED = {p.name for p in ZOO.iterdir() if p.is_dir()}   # the models of tspd/zoo, by name
N = 2   # samples recomputed per run
# the controller table's runs recomputed: each controller once, every cache mode and both CE settings
TABLE_PICKS = [("vanilla", False, "none"), ("fast-dllm", True, "dual"), ("tspd", True, "prefix"),
               ("learn2pd", False, "prefix"), ("prophet", False, "dual"), ("credit", True, "none")]


def _metas(directory=RUNS) -> list[dict]:
    """The sidecars of the embedded-model runs (a model of tspd/zoo) stored in ``directory`` (with their rows
    file, plain or packed), by key."""
    paths = [p for p in sorted(directory.glob("*.json")) if not p.name.endswith(".summary.json")]
    metas = [json.loads(p.read_text()) for p in paths]
    return [m for m in metas
            if m["config"].get("model") in EMBEDDED and ResultsFile(directory / f"{m['key']}.jsonl").exists()]


def picked_runs(k: int = 5) -> list[dict]:
    """Up to ``k`` committed embedded-model runs with distinct (controller, CE, cache), vanilla first, each the
    shortest window's of its kind (a longer window checks nothing more, at twice the cost or more)."""
    seen, out = set(), []
    metas = _metas()
    metas.sort(key=lambda m: (m["config"]["policy"] != "vanilla", m["config"]["gen_length"] or 0, m["key"]))
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
    stored = {row["id"]: row for row in ResultsFile(results_dir / f"{meta['key']}.jsonl").load()}   # plain or packed
    fresh = experiments.result(config, progress=False, results_dir=scratch)
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


@pytest.mark.slow   # decodes committed runs again
@pytest.mark.parametrize("meta", picked_runs(), ids=lambda m: "{}-{}".format(
    slug(m["config"]["policy"], m["config"]["ce"]), m["config"]["cache"]))
def test_committed_run_reproduces(meta, tmp_path):
    assert mismatches(meta, RUNS, tmp_path) == []


@pytest.mark.slow   # decodes a committed run again
def test_a_committed_joint_bound_run_reproduces(tmp_path):
    """The joint bound (beyond the paper; the own-decodings and Pareto pages' sweeps) has its own check, on the model
    where its product decides what a step commits (on a shell model's first problems a per-token threshold at the
    bound writes the same): its default run on tiny-leaning."""
    joint = [m for m in _metas() if m["config"]["policy"] == "joint" and m["config"]["model"] == "tiny-leaning"
             and not m["config"]["policy_kwargs"]]
    assert joint, f"no committed run of the joint bound at its default on tiny-leaning in {RUNS}"
    assert mismatches(joint[0], RUNS, tmp_path) == []


def table_picks() -> list:
    """``(kind, sidecar or None)`` for each of :data:`TABLE_PICKS`; one skipped case before the table exists."""
    if not TABLE.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(
            reason=f"{TABLE} not computed yet (python -m tspd controller-table)"))]
    by_kind = {}
    for m in _metas(TABLE):
        by_kind.setdefault((m["config"]["policy"], m["config"]["ce"], m["config"]["cache"]), m)
    return [pytest.param(kind, by_kind.get(kind), id=f"{slug(kind[0], kind[1])}-{kind[2]}")
            for kind in TABLE_PICKS]


@pytest.mark.slow   # decodes the controller table's runs again
@pytest.mark.parametrize("kind, meta", table_picks())
def test_controller_table_run_reproduces(kind, meta, tmp_path):
    assert meta is not None, f"{TABLE} has no run of {kind}: rerun python -m tspd controller-table"
    assert mismatches(meta, TABLE, tmp_path) == []


@pytest.mark.slow   # decodes a committed run again
def test_an_edited_run_file_is_caught(tmp_path):
    meta = min(picked_runs(), key=lambda m: (m["config"]["policy"] == "vanilla", m["key"]))   # a cheap run: few forwards
    rows = ResultsFile(RUNS / f"{meta['key']}.jsonl").load()          # plain or packed
    first = dict(rows[0], output=rows[0]["output"] + " edited")
    (tmp_path / f"{meta['key']}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [first, *rows[1:]]))
    shutil.copy(RUNS / f"{meta['key']}.json", tmp_path / f"{meta['key']}.json")
    found = mismatches(meta, tmp_path, tmp_path / "fresh")
    assert len(found) == 1 and first["id"] in found[0]


def test_disturbed_batches_are_found_by_their_time_per_forward(tmp_path):
    """scripts/redo_disturbed.py drops the rows of a batch that took far longer per forward than its fellows
    (wall time shared with other work), so that the harness decodes them again; the others are kept as written."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("redo_disturbed", REPO_ROOT / "scripts" / "redo_disturbed.py")
    redo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(redo)
    rows = [{"id": f"p{i}", "batch": f"b{i // 2}", "batch_seconds": 9.0 if i // 2 == 1 else 1.0, "nfe": 10 + i % 2}
            for i in range(8)]
    assert redo.disturbed(rows, 1.3) == {"b1"}
    path = tmp_path / "k.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "k.summary.json").write_text("{}")
    packed = tmp_path / "m.jsonl"                      # a packed run (the controller table's) is unpacked to be redone
    packed.write_text(path.read_text())
    ResultsFile(packed).pack()
    redo.main([str(tmp_path)])
    kept = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["id"] for r in kept] == ["p0", "p1", "p4", "p5", "p6", "p7"] and not (tmp_path / "k.summary.json").exists()
    assert packed.read_text() == path.read_text() and not ResultsFile(packed).packed.exists()
