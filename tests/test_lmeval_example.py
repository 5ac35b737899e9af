"""The README's lm-eval example: its numbers (results/lmeval_example.json, written into the README by
tspd.book.prose) must be what a fresh run of the README's command gives."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tspd.models.loading import checkpoint_task
from tspd.provenance import REPO_ROOT

pytest.importorskip("lm_eval")
RECORD = REPO_ROOT / "results" / "lmeval_example.json"


@pytest.mark.slow
def test_a_fresh_run_of_the_readmes_lmeval_command_gives_its_numbers(tmp_path):
    record = json.loads(RECORD.read_text())
    stored = record["runs"]["tspd.lmeval"]
    model = dict(kv.split("=", 1) for kv in record["model_args"].split(","))["pretrained"]
    task = f"tspd_{checkpoint_task(model)}"            # the lm-eval task of the model's own task: tspd_arith
    cmd = [sys.executable, "-m", "tspd.lmeval", "--model", "tspd", "--model_args", record["model_args"],
           "--tasks", task, "--limit", str(record["limit"]), "--threads", "1", "--output_path", str(tmp_path)]
    subprocess.run(cmd, cwd=REPO_ROOT, check=True, capture_output=True)
    (path,) = sorted(tmp_path.rglob("results_*.json"))
    results = json.loads(path.read_text())
    got = results["results"][task]
    assert results["config"]["tspd"]["generate_until"]["tpf"] == pytest.approx(stored["tpf"])
    assert got["exact_match,none"] == pytest.approx(stored["accuracy"])
    assert got["nfe,none"] == pytest.approx(stored["nfe"])
    assert got["tpf,none"] == pytest.approx(stored["tpf"])
    for other in record["runs"].values():     # the three commands of the example agree, as the README says
        assert (other["accuracy"], other["nfe"]) == pytest.approx((stored["accuracy"], stored["nfe"]))


def test_each_generated_task_has_its_lmeval_task(tmp_path):
    """The script's lm-eval task is tspd_<the model's task>: a chain checkpoint (its config.json alone) gets
    tspd_chain, whose YAML ships; the script refuses a model that names no generated task."""
    spec = importlib.util.spec_from_file_location("lmeval_example", REPO_ROOT / "scripts" / "lmeval_example.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    for task in ("arith", "chain"):
        model = tmp_path / task
        model.mkdir()
        (model / "config.json").write_text(json.dumps({"tspd_task": {"name": f"tspd.eval.tasks.{task}"}}))
        example = script.Example(str(model))
        assert (example.task, example.lmeval_task) == (task, f"tspd_{task}")
        assert (REPO_ROOT / example.yaml).is_file()
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="names no generated task"):
        script.Example(str(tmp_path / "none"))
