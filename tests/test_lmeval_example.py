"""The README's lm-eval example: its numbers (results/lmeval_example.json, written into the README by
tspd.book.prose) must be what a fresh run of the README's command gives."""
from __future__ import annotations

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
