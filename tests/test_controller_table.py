"""python -m tspd controller-table: its rows are RunConfigs run through the one harness, summarised from the rows."""
from __future__ import annotations

import argparse
import json

import pytest

from tspd import cli
from tspd.book import controller_table
from tspd.book import controller_table as record   # the record's tables (same module)
from tspd.commands import controller_table as command
from tspd.decoding.controllers import make_controller
from tspd.eval.experiments import RunConfig, RunResult
from tspd.validate import UsageError

from conftest import TEST_MODEL


@pytest.fixture(scope="module")
def ct():
    return controller_table


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    command.add_arguments(p)
    return p.parse_args(argv)


def test_configs_are_each_methods_default_setting(ct):
    configs = ct.table_configs(parse(["--model", TEST_MODEL, "--n", "3", "--controllers",
                                              "fast-dllm,credit,tspd", "--ce", "on", "--caches", "dual"]))
    assert list(configs)[0] == ct.BASELINE                 # the speedups' reference is always measured
    assert set(configs) == {ct.BASELINE, ("fast-dllm", True, "dual"), ("credit", True, "dual"), ("tspd", True, "dual")}
    fast = configs[("fast-dllm", True, "dual")]
    assert (fast.controller, fast.ce, fast.cache, fast.limit, fast.batch_size) == ("fast-dllm", True, "dual", 3, 1)
    assert fast.controller_kwargs == {} and configs[("tspd", True, "dual")].controller_kwargs == {}   # shipped weights
    for controller in ("fast-dllm", "credit"):     # "threshold 0.9" is the controllers' own default
        assert make_controller(controller).threshold == 0.9
    base = configs[ct.BASELINE]
    assert base == RunConfig(model=TEST_MODEL, limit=3) and base.key == RunConfig(model=TEST_MODEL).key
    assert base.task == "arith"                            # the model's own task


def test_bad_lists_are_one_line_errors(ct):
    for argv in (["--controllers", "vanilla,egp"], ["--caches", "full"], ["--ce", "yes"], ["--controllers", ","]):
        with pytest.raises(UsageError, match="choose from"):
            ct.table_configs(parse(["--model", TEST_MODEL, *argv]))


def result(config: RunConfig, outputs: list[str], timed: bool = True, tps: float | None = 100.0) -> RunResult:
    """A stored run of ``outputs`` (its answer is the last character), phase-timed or not."""
    rows = [{"id": f"p{i}", "output": o, "extracted": o[-1:], "correct": o.endswith("7"), "nfe": 8, "seconds": 0.5,
             "batch": f"s:{i}", "warmup": i == 0} for i, o in enumerate(outputs)]
    for r in rows if timed else []:
        r.update(forward_seconds=0.4, controller_seconds=0.02, ce_seconds=0.01)
    return RunResult(config, rows, {"tps": tps}, None, "cpu")


def test_summary_from_the_rows(ct):
    base = RunConfig(model=TEST_MODEL, limit=2)
    results = {ct.BASELINE: result(base, ["a 7", "b 5"], tps=50.0),
               ("fast-dllm", False, "none"): result(base.replace(controller="fast-dllm"), ["a 7", "b 6"], timed=False),
               ("fast-dllm", False, "dual"): result(base.replace(controller="fast-dllm", cache="dual"), ["a 7", "c 6"])}
    table = ct.table_of(results, 2, {"n": 2})
    van, fast, dual = table["rows"]
    assert table["n"] == 2 and van["key"] == base.key and van["complete"] and van["speedup_tps"] == 1.0
    assert van["accuracy"] == 0.5 and van["accuracy_95"] == pytest.approx((0.0945, 0.9055), abs=1e-4)
    assert van["controller_pct_of_forward"] == pytest.approx(5.0) and van["ce_pct_of_forward"] == pytest.approx(2.5)
    assert van["forward_ms"] == pytest.approx(50.0)                  # the warm-up problem is left out
    assert fast["controller_pct_of_forward"] is None and fast["speedup_tps"] == 2.0   # rows without phase times
    assert (fast["same_text_as_vanilla"], fast["same_answer_as_vanilla"]) == (0.5, 0.5)
    assert "same_text_as_no_cache" not in fast
    assert (dual["same_text_as_no_cache"], dual["same_answer_as_no_cache"]) == (0.5, 1.0)
    assert dual["char_agreement_with_no_cache"] == pytest.approx((1 + 2 / 3) / 2)
    text = record.markdown(table)
    assert text.count("\n") == 4
    assert "| fast-dllm | off | none | 50.0 [9.5, 90.5] | 8.0 | 100.0 | 2.00 | – | – |" in text
    assert "fast-dllm" in record.console(table)


def test_same_answer_is_the_whole_plan_where_the_task_grades_it(ct):
    """On roster two plans with the same day count (the extracted "#### 2") are not the same answer: the table
    compares what the grade reads, as the notebooks do (tspd.tasks.generated.row_answer)."""
    base = RunConfig(model=TEST_MODEL, limit=2, task="roster")
    day = "On day {} they will cook and {}.\n"
    plans = [day.format(1, "wash") + day.format(2, "shop") + "#### 2", day.format(1, "wash") + day.format(2, "wash") + "#### 2"]
    spaced = plans[0].replace("will cook", "will  cook")             # spaces normalised: the same plan
    results = {ct.BASELINE: result(base, [plans[0], plans[0]]),
               ("fast-dllm", False, "none"): result(base.replace(controller="fast-dllm"), [plans[1], spaced])}
    fast = ct.table_of(results, 2, {"n": 2})["rows"][1]
    assert fast["same_answer_as_vanilla"] == 0.5 and fast["same_text_as_vanilla"] == 0.0


def test_tiny_run_writes_its_runs_beside_out_and_resumes(tmp_path, capsys):
    out = tmp_path / "t" / "table.json"
    argv = ["--model", TEST_MODEL, "--n", "1", "--controllers", "vanilla", "--ce", "off", "--caches", "none,prefix",
            "--out", str(out)]
    assert cli.main(["controller-table", *argv]) == 0
    table = json.loads(out.read_text())
    runs = tmp_path / "t" / "controller_table"
    assert [(r["cache"], r["n"]) for r in table["rows"]] == [("none", 1), ("prefix", 1)]
    for r in table["rows"]:
        assert (runs / f"{r['key']}.jsonl.gz").exists() and (runs / f"{r['key']}.json").exists()   # packed once done
        assert not (runs / f"{r['key']}.jsonl").exists()
        assert r["controller_pct_of_forward"] > 0 and r["ce_pct_of_forward"] == 0.0 and r["tps"] > 0
    assert table["rows"][1]["same_text_as_no_cache"] in (0.0, 1.0) and table["command"].endswith(str(out))
    assert "computed" in capsys.readouterr().out
    assert cli.main(["controller-table", *argv]) == 0 and "computed" not in capsys.readouterr().out   # read back, nothing decoded
    assert json.loads(out.read_text())["rows"] == table["rows"]
