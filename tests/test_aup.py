"""AUP (tspd.eval.aup): its definition, the d3LLM leaderboard's points as theirs, the AUP claim, and the
Pareto page's record recomputed from the stored sweep rows."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tspd.book import anchors, pareto
from tspd.book.claims import HOLDS, FAILS
from tspd.book.claims import runs as rc
from tspd.eval import aup as A
from tspd.records.rows import ResultsFile
from tspd.tasks.registry import get_task
from tspd.provenance import REPO_ROOT


# ---- AUP ------------------------------------------------------------------------------------------
def test_aup_on_the_d3llm_leaderboards_points():
    """Their points (LLaDA-8B-Instruct, GSM8K), AUP written out by hand from the definition."""
    board = anchors.board("LLaDA-8B-Instruct", "gsm8k")
    got = anchors.board_aups(board)
    y_max = 74.79                                   # Fast-dLLM's first point, the best of them
    w = lambda y: min(math.exp(-3 * (1 - y / y_max)), 1.0)  # noqa: E731
    assert got["LLaDA"] == pytest.approx(1.0 * 72.55)
    assert got["d3LLM"] == pytest.approx(9.11 * 73.09)          # one point: rho * y, no weight
    assert got["Fast-dLLM"] == pytest.approx(1.0 * 74.79 + 0.5 * (2.77 - 1.0) * (74.68 * w(74.68) + 74.79 * w(74.79)))
    assert max(got, key=got.get) == "d3LLM"
    assert "d3LLM leaderboard's numbers" in anchors.label(board)


def test_aup_sorts_by_tpf_drops_points_5_below_the_first_and_weights_by_the_best():
    pts = [(4.0, 80.0), (1.0, 90.0), (2.0, 88.0), (8.0, 70.0)]          # (TPF, accuracy %)
    assert A.kept(pts) == [(1.0, 90.0), (2.0, 88.0)]                    # 80 and 70 are > 5 below 90
    assert A.aup(pts, 90.0) == pytest.approx(90.0 + 0.5 * 1.0 * (88.0 * A.weight(88.0, 90.0) + 90.0))
    assert A.weight(90.0, 90.0) == 1.0 and A.weight(95.0, 90.0) == 1.0 and A.weight(45.0, 90.0) == pytest.approx(math.exp(-1.5))
    assert A.aup([(1.0, 90.0), (2.0, 88.0)], 99.0) < A.aup([(1.0, 90.0), (2.0, 88.0)], 90.0)   # a better rival lowers it
    with pytest.raises(ValueError):
        A.aup([], 90.0)
    with pytest.raises(ValueError):
        A.aup([(0.0, 90.0)], 90.0)


class _Run:
    def __init__(self, key, correct, gen, nfe):
        self.key = key
        self.samples = [{"id": i, "correct": c, "gen_tokens": g, "nfe": n} for i, (c, g, n) in enumerate(zip(correct, gen, nfe))]


def test_higher_aup_claim_on_synthetic_runs():
    n = 60
    fast = _Run("f", [1] * n, [32] * n, [2] * n)      # TPF 16
    slow = _Run("s", [1] * n, [32] * n, [8] * n)      # TPF 4, same accuracy
    worse = _Run("w", [0] * 30 + [1] * 30, [32] * n, [1] * n)   # TPF 32 at half the accuracy: AUP 1600 vs 1600
    f = rc.higher_aup({"fast": [fast], "slow": [slow]}, "fast", "slow")
    assert f.value == pytest.approx(4.0) and f.verdict == HOLDS
    assert rc.higher_aup({"fast": [fast], "slow": [slow]}, "slow", "fast").verdict == FAILS
    assert rc.higher_aup({"fast": [fast], "worse": [worse]}, "fast", "worse").value == pytest.approx(1.0)
    sweep = rc.sweep_aups({"both": [rc.point_series(slow), rc.point_series(fast)], "one": [rc.point_series(slow)]})
    assert sweep["both"] == pytest.approx(A.aup([(4.0, 100.0), (16.0, 100.0)], 100.0))
    assert sweep["one"] == pytest.approx(400.0)


# ---- the Pareto page's record ---------------------------------------------------------------------
def _stored_rows(key: str, task: str, n: int) -> list[dict]:
    rows = {r["id"]: r for r in ResultsFile(REPO_ROOT / "results" / "runs" / f"{key}.jsonl").load()}
    return [rows[s["id"]] for s in get_task(task).samples(n)]


def test_pareto_record_is_recomputed_from_the_stored_sweep_rows():
    """Every point of results/pareto.json from its run's stored rows, and every AUP from those points."""
    if not pareto.RECORD.exists():
        pytest.fail("results/pareto.json is missing: execute notebooks/pareto.ipynb")
    record = json.loads(pareto.RECORD.read_text())
    assert record["alpha"] == A.ALPHA and record["drop"] == A.DROP
    from tspd.models.loading import DEFAULT_MODEL
    assert record["model"] == DEFAULT_MODEL    # the book's model's sweeps (a switch redoes them)
    for task, sweeps in record["tasks"].items():
        fresh = {}
        for name, sweep in sweeps.items():
            fresh[name] = []
            for p in sweep["points"]:
                rho, acc = A.point(_stored_rows(p["key"], task, record["n"]))
                assert (rho, acc) == pytest.approx((p["tpf"], p["accuracy"])), f"{task} {name} {p['setting']}"
                fresh[name].append((rho, acc))
        y_max = max(y for pts in fresh.values() for _, y in pts)
        for name, value in A.aups(fresh, y_max).items():
            s = sweeps[name]
            assert value == pytest.approx(s["aup"]), name
            assert s["lo"] <= s["aup"] <= s["hi"] and s["y_max"] == pytest.approx(y_max)
        assert pareto.recomputed_aups(sweeps) == pytest.approx({k: v["aup"] for k, v in sweeps.items()})


def test_pareto_sweeps_are_named_in_the_record_from_their_controller_and_cache():
    n = 40
    runs = {("Vanilla", "none"): [(None, _Run("v", [1] * n, [32] * n, [32] * n))],
            ("TSPD + CE", "none"): [(0.5, _Run("t", [1] * n, [32] * n, [8] * n))],
            ("Fast-dLLM", "none"): [(0.9, _Run("f", [1] * n, [32] * n, [4] * n))]}
    rec = pareto.record("m", n, {"arith": runs}, seed=0)
    got = rec["tasks"]["arith"]
    assert list(got) == ["Vanilla / none", "TSPD + CE / none", "Fast-dLLM / none"] == [pareto.name(*s) for s in runs]
    assert got["Fast-dLLM / none"]["ratio"] == pytest.approx(2.0) and got["TSPD + CE / none"]["ratio"] == 1.0
    assert np.isfinite(A.weight(0.0, 0.0))


def test_forwards_at_reads_the_sweep_where_it_reaches_an_accuracy():
    sweep = [(100.0, 90.0), (40.0, 50.0), (60.0, 70.0)]            # (forwards, accuracy %), any order
    assert A.forwards_at(sweep, 60.0) == pytest.approx(50.0)          # halfway between 40 and 60 forwards
    assert A.forwards_at(sweep, 90.0) == 100.0
    assert A.forwards_at(sweep, 30.0) == 40.0                         # its cheapest point already does
    assert A.forwards_at(sweep, 95.0) == math.inf


def _write_run(folder, key, right, nfe):
    ResultsFile(folder / f"{key}.jsonl").append([{"id": f"p{i}", "correct": c, "nfe": n}
                                                 for i, (c, n) in enumerate(zip(right, nfe))])


def test_equal_accuracy_divides_the_sweeps_forwards_at_the_references_accuracy(tmp_path):
    n = 40
    _write_run(tmp_path, "ref", [True] * 36 + [False] * 4, [50] * n)           # 90 % in 50 forwards
    _write_run(tmp_path, "g1", [True] * 20 + [False] * 20, [20] * n)           # 50 % in 20
    _write_run(tmp_path, "g2", [False] * 3 + [True] * 37, [120] * n)           # 92.5 % in 120, on other problems
    pt = lambda key, s: {"setting": s, "key": key, "tpf": 1.0, "accuracy": 0.0}  # noqa: E731 (read from the rows)
    rec = {"model": "m", "tasks": {"t": {"Fast-dLLM / none": {"points": [pt("ref", 0.9)]},
                                         "TSPD + CE / none": {"points": [pt("g1", 0.5), pt("g2", 0.99)]}}}}
    path = tmp_path / "pareto.json"
    path.write_text(json.dumps(rec))
    got = pareto.equal_accuracy(path, n_boot=200)
    assert got["value"] == pytest.approx((20 + (90 - 50) / (92.5 - 50) * 100) / 50)   # 2.28: slower at equal accuracy
    assert got["n"] == n and got["lo"] <= got["value"] <= got["hi"]
    assert got["hi"] == math.inf          # resamples where the reference beats the sweep's best: never reached there
    rec["tasks"]["t"].pop("TSPD + CE / none")
    path.write_text(json.dumps(rec))
    assert pareto.equal_accuracy(path) is None


def test_the_premise_map_reads_every_committed_sweep():
    from tspd.book.pareto import sweep_ratios
    from tspd.models.loading import DEFAULT_MODEL
    got = sweep_ratios()
    assert {DEFAULT_MODEL, "tiny-styled"} <= set(got)   # the book's Pareto record and a training record's
    assert got["tiny-styled"]["lo"] > 1      # slower than Fast-dLLM at its accuracy, the whole interval


def test_a_default_gate_counts_only_at_equal_accuracy():
    """A model without a gate sweep gets a ratio at its default gate only where TSPD + CE's right answers are
    Fast-dLLM's within one (0.49 of the forwards at 0 of 100 right is no gain)."""
    from tspd.measures.dynamics import equal_accuracy_ratio
    cell = {"value": 40.0, "lo": 39.0, "hi": 41.0}
    rec = lambda ours, fast: {"summary": {"unsure": cell, "prompts": 100, "tspd_ce_correct": ours,   # noqa: E731
                                          "fast_correct": fast,
                                          "tspd_ce": {"over_fast": {"value": 0.5, "lo": 0.4, "hi": 0.6}}}}
    even, _ = equal_accuracy_ratio("even", rec(99, 100), sweeps={})
    broken, how = equal_accuracy_ratio("broken", rec(0, 100), sweeps={})
    assert even["value"] == 0.5 and broken is None and "not at equal accuracy" in how


def test_a_gate_sweep_that_never_reaches_the_accuracy_gives_no_ratio():
    from tspd.measures.dynamics import equal_accuracy_ratio
    rec = {"summary": {"unsure": {"value": 40.0, "lo": 39.0, "hi": 41.0}, "prompts": 200, "tspd_ce_correct": 0,
                       "fast_correct": 200}}
    never = {"value": float("inf"), "lo": float("inf"), "hi": float("inf"), "reference_accuracy": 100.0, "n": 200}
    reached = {"value": 3.5, "lo": 3.3, "hi": float("inf"), "reference_accuracy": 89.5, "n": 200}
    assert equal_accuracy_ratio("m", rec, {"m": never}) == (None, "its gate sweep never reaches Fast-dLLM 0.9's "
                                                                  "100.0 %, n = 200")
    assert equal_accuracy_ratio("m", rec, {"m": reached})[0] is reached


def test_the_premise_map_places_each_model_by_its_loss_and_premise_coloured_by_its_ratio():
    """Three models with a 2-token row (faster, slower, no ratio) and one without: three points, the faster green,
    the slower red, the one without a ratio a cross; the model without the row is in the table, not on the map."""
    import matplotlib
    matplotlib.use("Agg")
    from tspd.book.regime import premise_map, premise_table
    cell = lambda v: {"value": v, "lo": v - 1, "hi": v + 1}   # noqa: E731
    rows = [{"model": "fast", "loss2": cell(5.0), "unsure": cell(40.0), "ratio": {"value": 0.6, "lo": 0.5, "hi": 0.7},
             "how": "sweep"},
            {"model": "slow", "loss2": cell(90.0), "unsure": cell(1.0), "ratio": {"value": 1.2, "lo": 1.1, "hi": 1.3},
             "how": "default gate"},
            {"model": "broken", "loss2": cell(50.0), "unsure": cell(30.0), "ratio": None, "how": "never reaches"},
            {"model": "old", "loss2": None, "unsure": cell(3.0), "ratio": None, "how": "default gate"}]
    ax = premise_map(rows).axes[0]
    assert [t.get_text() for t in ax.texts] == ["1", "2", "3"]
    colours = [c.lines[0].get_color() for c in ax.containers]
    assert colours == ["tab:green", "tab:red", "gray"]
    table = premise_table(rows)
    assert [r["#"] for r in table] == [1, 2, 3, 4] and table[3]["2 tokens per step lose, points"] == "-"


def test_a_run_against_a_reference_gives_the_paired_gap_and_the_forwards_ratio():
    """Half the forwards on every problem, one answer lost of 4: ratio 0.5 with an interval around it (every
    resample halves), gap -25 points with a paired interval that holds 0 (one disagreement is not a difference)."""
    ref = [{"id": i, "correct": True, "nfe": 10 * (i + 1)} for i in range(4)]
    run = [{"id": i, "correct": i != 2, "nfe": 5 * (i + 1)} for i in reversed(range(4))]
    got = A.against(run, ref)
    assert got["ratio"] == got["ratio_lo"] == got["ratio_hi"] == pytest.approx(0.5)
    assert got["gap"] == pytest.approx(-25.0) and got["gap_lo"] < -25.0 < 0.0 < got["gap_hi"]
    with pytest.raises(ValueError, match="same problems"):
        A.against(run[:3], ref)
