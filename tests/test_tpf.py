"""TPF (tspd.eval.results.tpf), defined once: generated tokens that are not EOS/EoT, pad or mask over the
forwards that wrote them, in run summaries, stored rows and lm-eval's samples and table."""
from __future__ import annotations

import json
import math

import pytest

from tspd.eval.results import row_tpf, summarize, tpf
from tspd.records.rows import ResultsFile
from tspd.provenance import REPO_ROOT


# ---- TPF ------------------------------------------------------------------------------------------
def test_tpf_is_a_ratio_of_sums_over_each_rows_own_forwards():
    rows = [{"id": "a", "correct": True, "gen_tokens": 30, "nfe": 2},
            {"id": "b", "correct": False, "gen_tokens": 10, "nfe": 8}]
    assert tpf(rows) == pytest.approx(40 / 10)            # not the mean of 15 and 1.25
    assert row_tpf(rows[0]) == 15 and row_tpf(rows[1]) == 1.25
    assert tpf([]) is None and tpf([{"id": "c", "gen_tokens": None, "nfe": 3}]) is None
    assert tpf([{"id": "c", "gen_tokens": 5, "nfe": 0}]) is None
    assert summarize(rows)["tpf"] == pytest.approx(4.0)


def test_tpf_of_a_stored_run_counts_answer_tokens_not_the_window():
    """gen_length / NFE counts the EOS tail; TPF does not: a stored vanilla run (one token per step)
    writes fewer answer tokens than forwards."""
    path = next(p for p in sorted((REPO_ROOT / "results" / "runs").glob("*.json"))
                if not p.name.endswith(".summary.json")
                and json.loads(p.read_text())["config"].get("policy") == "vanilla"
                and json.loads(p.read_text())["config"].get("cache") == "none")
    rows = ResultsFile(path.with_suffix(".jsonl")).load()
    gen_length = json.loads(path.read_text())["config"]["gen_length"]
    assert all(r["nfe"] == gen_length for r in rows)
    assert tpf(rows) < 1.0 and gen_length / rows[0]["nfe"] == 1.0


def test_lmeval_samples_report_tpf_and_the_table_aggregates_it_as_a_ratio_of_sums():
    from types import SimpleNamespace
    from tspd.eval.lmeval.taskfns import _speed, aggregate_tpf
    a = _speed(SimpleNamespace(tspd={"nfe": 2, "gen_tokens": 30}))["tpf"]
    b = _speed(SimpleNamespace(tspd={"nfe": 8, "gen_tokens": 10}))["tpf"]
    assert a == {"gen_tokens": 30, "nfe": 2, "tpf": 15.0}
    assert aggregate_tpf([a, b, None]) == pytest.approx(4.0)
    assert _speed("plain text")["tpf"] is None and math.isnan(aggregate_tpf([None]))


def test_the_registrys_summary_carries_the_same_tpf():
    from tspd.eval.experiments import RunConfig, load_result
    path = sorted((REPO_ROOT / "results" / "runs").glob("*.json"))
    meta = json.loads(next(p for p in path if not p.name.endswith(".summary.json")).read_text())
    result = load_result(RunConfig.from_dict({**meta["config"], "limit": 20}))
    assert result is not None and result.summary["tpf"] == pytest.approx(tpf(result.samples))
