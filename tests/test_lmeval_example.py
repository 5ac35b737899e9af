"""The README's lm-eval example: its numbers (results/lmeval_example.json, written into the README by
tspd.measures.lmeval_example.example_table) must be what a fresh run of the README's command gives."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tspd.models.loading import checkpoint_task
from tspd.provenance import REPO_ROOT
from tspd.measures import lmeval_example
from tspd.measures.lmeval_example import Example

pytest.importorskip("lm_eval")


@pytest.mark.slow
def test_a_fresh_run_of_the_readmes_lmeval_command_gives_its_numbers(tmp_path):
    record = lmeval_example.load()
    stored = record.runs["tspd.lmeval"]
    task = f"tspd_{checkpoint_task(record.model)}"     # the lm-eval task of the model's own task: tspd_arith
    cmd = [sys.executable, "-m", "tspd.lmeval", "--model", "tspd", "--model_args", record.model_args,
           "--tasks", task, "--limit", str(record.limit), "--threads", "1", "--output_path", str(tmp_path)]
    subprocess.run(cmd, cwd=REPO_ROOT, check=True, capture_output=True)
    (path,) = sorted(tmp_path.rglob("results_*.json"))
    results = json.loads(path.read_text())
    got = results["results"][task]
    assert results["config"]["tspd"]["generate_until"]["tpf"] == pytest.approx(stored.tpf)
    assert got["exact_match,none"] == pytest.approx(stored.accuracy)
    assert got["nfe,none"] == pytest.approx(stored.nfe)
    assert got["tpf,none"] == pytest.approx(stored.tpf)
    for other in record.runs.values():     # the three commands of the example agree, as the README says
        assert (other.accuracy, other.nfe) == pytest.approx((stored.accuracy, stored.nfe))


def test_each_generated_task_has_its_lmeval_task(tmp_path):
    """The example's lm-eval task is tspd_<the model's task>: a chain checkpoint (its config.json alone) gets
    tspd_chain, whose YAML ships; the command refuses a model that names no generated task."""
    for task in ("arith", "chain"):
        model = tmp_path / task
        model.mkdir()
        (model / "config.json").write_text(json.dumps({"tspd_task": {"name": f"tspd.tasks.registry.{task}"}}))
        example = Example(str(model))
        assert (example.task, example.lmeval_task) == (task, f"tspd_{task}")
        assert (REPO_ROOT / example.yaml).is_file()
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="names no generated task"):
        Example(str(tmp_path / "none"))


def test_the_readmes_lmeval_commands_are_the_records():
    """The commands the README shows are those the record ran (its model, settings and task), so a switch of
    the book's model cannot leave the README's example on the old one."""
    record = lmeval_example.load()
    readme = (REPO_ROOT / "book" / "lmeval.md").read_text()   # the lm-eval page
    task = checkpoint_task(record.model)
    assert f"--model_args {record.model_args}" in readme and f"tspd_{task}/tspd_{task}.yaml" in readme
    assert f"--tasks tspd_{task} --limit {record.limit}" in readme and f"eval --task {task} " in readme
