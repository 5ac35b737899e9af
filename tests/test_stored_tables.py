"""The committed controller table and cache-agreement results must be what the current code decodes.

Both are made by commands that take tens of minutes (``python -m tspd controller-table``,
``python -m tspd cache-agreement``); a decoder, controller or checkpoint change that would alter them must
fail here. The controller table is made from the harness runs in ``results/controller_table`` (some of
which ``test_stored_runs`` recomputes); here its JSON must be the summary of those runs. A few stored
per-problem rows of the cache agreement are recomputed and compared exactly.
"""
from __future__ import annotations

import json

import pytest

from tspd.book import controller_table
from tspd.book import controller_table as table_record   # the record's reader and tables (same module)
from tspd.eval.experiments import RunConfig, load_result
from tspd.models.loaded import get_model
from tspd.provenance import REPO_ROOT
from tspd.tasks.generated import trained_task
from tspd.measures import cache_agreement as agreement_record

TABLE = table_record.runs_dir()   # the table's runs (tspd.eval.experiments files)


def stored_rows() -> list[dict]:
    path = agreement_record.samples_path()
    if not path.exists():
        pytest.fail(f"{path} is missing: it is committed with the README's tables")
    return agreement_record.load_samples()


def test_controller_table_is_the_summary_of_its_runs():
    if not TABLE.is_dir():
        pytest.skip(f"{TABLE} not computed yet (python -m tspd controller-table)")
    table = table_record.load_dict()
    results = {}
    for row in table["rows"]:
        assert "key" in row, "embedded_controllers.json predates results/controller_table: rerun the script"
        meta = json.loads((TABLE / f"{row['key']}.json").read_text())
        config = RunConfig.from_dict({**meta["config"], "limit": table["n"]})
        results[(row["controller"], row["ce"], row["cache"])] = load_result(config, TABLE)
        assert results[(row["controller"], row["ce"], row["cache"])] is not None, f"{row['key']}: rows missing"
    fresh = controller_table.table_of(results, table["n"], {})["rows"]
    assert len(fresh) == len(table["rows"])
    assert json.loads(json.dumps(fresh)) == table["rows"]


def test_cache_agreement_rows_are_reproduced():
    agreement = agreement_record
    rows = {(r["policy"], r["cache"], r["id"]): r for r in stored_rows()}
    name = agreement_record.load().model   # the model it was measured on
    model, task = get_model(name, "cpu", None), trained_task(name)
    for p in task.load_split("test", 2):
        for new in agreement.rows_for(model, task, p, "fast-dllm", agreement.CONTROLLERS["fast-dllm"]):
            old = rows[(new["policy"], new["cache"], new["id"])]
            kept = old.keys() - {"parting"}   # rows stored before the faults were kept have none
            assert {k: new[k] for k in kept} == {k: old[k] for k in kept} and set(new) >= set(old)
            assert (new["parting"] is None) == (old["parting"] is None)
            if new["parting"]:
                for k, v in old["parting"].items():
                    assert new["parting"][k] == pytest.approx(v, abs=1e-4), k


@pytest.mark.parametrize("command, record", [("controller-table", table_record), ("cache-agreement", agreement_record)])
def test_readme_quotes_the_stored_table(command, record):
    """The README's table is the command's ``--markdown`` of the committed JSON, not an older pasting."""
    if not record.PATH.exists():
        pytest.skip(f"{record.PATH} not computed yet (python -m tspd {command})")
    table = record.markdown(record.load_dict()).strip()
    page = REPO_ROOT / "book" / "controllers.md"
    assert table in page.read_text(), f"paste `python -m tspd {command} --markdown` into {page.name}"


def test_the_readmes_words_around_the_controller_table_name_its_model_and_task():
    """The prose before the pasted table says which problems it decodes: the record's task and model."""
    if not table_record.PATH.exists():
        pytest.skip(f"{table_record.PATH} not computed yet (python -m tspd controller-table)")
    stored = table_record.load_dict()
    readme = (REPO_ROOT / "book" / "controllers.md").read_text()
    assert f"held-out `{stored['task']}` test problems" in readme
