"""The committed controller table and cache-agreement results must be what the current code decodes.

Both files are made by scripts that take tens of minutes (``scripts/controller_table.py``,
``scripts/cache_agreement.py``); a decoder, controller or checkpoint change that would alter them must
fail here. A few of their stored per-problem rows are recomputed and compared exactly.
"""
from __future__ import annotations

import importlib.util
import json

import pytest

from tspd.eval.tasks import arith
from tspd.eval.experiments import REPO_ROOT, get_model
from tspd.decoding.loop import generate

RESULTS = REPO_ROOT / "results"


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


@pytest.mark.parametrize("config", ["vanilla|ce=off|cache=none", "fast-dllm|ce=on|cache=dual",
                                    "tspd|ce=on|cache=prefix", "learn2pd|ce=off|cache=prefix"])
def test_controller_table_rows_are_reproduced(config):
    table = script("controller_table")
    rows = {(r["config"], r["id"]): r for r in stored_rows("embedded_controllers")}
    ctrl, ce, cache = config.split("|")
    policy, kwargs = table.CONTROLLERS[ctrl]
    model = get_model("tiny-arith", "cpu", None)
    for p in arith.load_split("test", 2):
        row = rows[(config, p["id"])]
        out = generate(model, [arith.prompt(p)], policy=policy, policy_kwargs=kwargs, ce=ce == "ce=on",
                       cache=cache.split("=")[1])
        assert (out.texts[0], out.nfe_per_sample[0]) == (row["text"], row["nfe"]), (config, p["id"])


def test_cache_agreement_rows_are_reproduced():
    agreement = script("cache_agreement")
    rows = {(r["policy"], r["cache"], r["id"]): r for r in stored_rows("cache_agreement")}
    model = get_model("tiny-arith", "cpu", None)
    for p in arith.load_split("test", 2):
        for new in agreement.rows_for(model, p, "fast-dllm", agreement.POLICIES["fast-dllm"]):
            old = rows[(new["policy"], new["cache"], new["id"])]
            assert {k: v for k, v in new.items() if k != "parting"} == {k: v for k, v in old.items() if k != "parting"}
            assert (new["parting"] is None) == (old["parting"] is None)
            if new["parting"]:
                for k, v in old["parting"].items():
                    assert new["parting"][k] == pytest.approx(v, abs=1e-4), k
