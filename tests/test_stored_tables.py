"""The committed controller table and cache-agreement results must be what the current code decodes.

Both are made by scripts that take tens of minutes (``scripts/controller_table.py``,
``scripts/cache_agreement.py``); a decoder, controller or checkpoint change that would alter them must
fail here. The controller table is made from the harness runs in ``results/controller_table`` (some of
which ``test_stored_runs`` recomputes); here its JSON must be the summary of those runs. A few stored
per-problem rows of the cache agreement are recomputed and compared exactly.
"""
from __future__ import annotations

import importlib.util
import json

import pytest

from tspd.eval.experiments import REPO_ROOT, RunConfig, get_model, load_result
from tspd.eval.tasks.generated import trained_task

RESULTS = REPO_ROOT / "results"
TABLE = RESULTS / "controller_table"   # the table's runs (tspd.eval.experiments files)


def script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stored_rows(name: str) -> list[dict]:
    path = RESULTS / f"{name}.samples.jsonl"
    if not path.exists():
        pytest.fail(f"{path} is missing: it is committed with the README's tables")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_controller_table_is_the_summary_of_its_runs():
    if not TABLE.is_dir():
        pytest.skip(f"{TABLE} not computed yet (scripts/controller_table.py)")
    table = json.loads((RESULTS / "embedded_controllers.json").read_text())
    results = {}
    for row in table["rows"]:
        assert "key" in row, "embedded_controllers.json predates results/controller_table: rerun the script"
        meta = json.loads((TABLE / f"{row['key']}.json").read_text())
        config = RunConfig.from_dict({**meta["config"], "limit": table["n"]})
        results[(row["controller"], row["ce"], row["cache"])] = load_result(config, TABLE)
        assert results[(row["controller"], row["ce"], row["cache"])] is not None, f"{row['key']}: rows missing"
    fresh = script("controller_table").summarise(results, table["n"], {})["rows"]
    assert len(fresh) == len(table["rows"])
    assert json.loads(json.dumps(fresh)) == table["rows"]


def test_cache_agreement_rows_are_reproduced():
    agreement = script("cache_agreement")
    rows = {(r["policy"], r["cache"], r["id"]): r for r in stored_rows("cache_agreement")}
    name = json.loads((RESULTS / "cache_agreement.json").read_text())["model"]   # the model it was measured on
    model, task = get_model(name, "cpu", None), trained_task(name)
    for p in task.load_split("test", 2):
        for new in agreement.rows_for(model, task, p, "fast-dllm", agreement.POLICIES["fast-dllm"]):
            old = rows[(new["policy"], new["cache"], new["id"])]
            assert {k: v for k, v in new.items() if k != "parting"} == {k: v for k, v in old.items() if k != "parting"}
            assert (new["parting"] is None) == (old["parting"] is None)
            if new["parting"]:
                for k, v in old["parting"].items():
                    assert new["parting"][k] == pytest.approx(v, abs=1e-4), k


@pytest.mark.parametrize("name, stored", [("controller_table", "embedded_controllers"),
                                          ("cache_agreement", "cache_agreement")])
def test_readme_quotes_the_stored_table(name, stored):
    """The README's table is the script's ``--markdown`` of the committed JSON, not an older pasting."""
    path = RESULTS / f"{stored}.json"
    if not path.exists():
        pytest.skip(f"{path} not computed yet (scripts/{name}.py)")
    table = script(name).markdown(json.loads(path.read_text())).strip()
    assert table in (REPO_ROOT / "README.md").read_text(), f"paste `scripts/{name}.py --markdown` into the README"
