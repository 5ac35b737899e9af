"""The regime figures (tspd.measures.regime): which decodings, and what the headline figures say of them."""
from __future__ import annotations

import pytest

from tspd.measures.regime import REGIME_COLUMNS, RegimeConfig, decodings, headline


def test_the_decodings_cover_tpf_the_fixed_schedule_each_cache_and_the_longer_window():
    got = {name: (d, long) for name, d, long in decodings(RegimeConfig(long_windows=(512,)), 256, 32)}
    assert set(got) == {"vanilla", "fast", "fast70", "fast50", "fixed2", "fixed4", "fixed8", "block_step", "vanilla_prefix",
                        "fast_prefix", "vanilla_dual", "fast_dual", "vanilla_512"}
    assert got["fast50"][0].controller_kwargs == {"threshold": 0.5}   # Fast-dLLM below 0.9: the curve's slope
    assert got["fast"][0].controller == "fast-dllm" and got["fast"][0].controller_kwargs == {"threshold": 0.9}
    assert got["fixed4"][0].steps == 64 and got["fixed8"][0].steps == 32 and got["vanilla_dual"][0].cache == "dual"
    assert got["block_step"][0].steps == 8 and got["block_step"][0].block_length == 32   # one step per block
    assert got["vanilla_512"][0].gen_length == 512 and got["vanilla_512"][1] and not got["vanilla"][1]


def _row(correct, n=100, tpf=1.0):
    return {"n": n, "correct": correct, "accuracy": correct / n, "tpf": tpf, "nfe": 1}


def test_summary_gives_costs_in_points_of_accuracy():
    rows = {"vanilla": _row(90), "fast": _row(88, tpf=5.5), "fixed4": _row(80), "fixed8": _row(50),
            "block_step": _row(5), "vanilla_prefix": _row(89),
            "vanilla_dual": _row(91), "fast_prefix": _row(88), "fast_dual": _row(85), "vanilla_512": _row(20, 24),
            "vanilla_short": _row(22, 24)}
    s = headline(rows, RegimeConfig(), 256, 32)      # the longer window: twice the checkpoint's
    assert tuple(s) == REGIME_COLUMNS
    assert s["fast_tpf"] == 5.5 and s["fixed_loss"] == pytest.approx(10.0) and s["fast_loss"] == pytest.approx(2.0)
    assert s["fixed8_loss"] == pytest.approx(40.0) and s["block_step_loss"] == pytest.approx(85.0)
    assert s["fixed2_loss"] is None                             # not measured: no figure
    assert s["vanilla_prefix_cost"] == pytest.approx(1.0) and s["vanilla_dual_cost"] == pytest.approx(-1.0)
    assert s["fast_dual_cost"] == pytest.approx(3.0) and s["long_accuracy"] == pytest.approx(20 / 24)
    assert s["long_gap"] == pytest.approx(100 * 2 / 24, abs=0.01)
    assert headline({k: v for k, v in rows.items() if k != "vanilla_512"}, RegimeConfig(long_windows=()), 256, 32)["long_gap"] is None


def test_training_evaluations_can_leave_out_the_costly_vanilla_cache_rows():
    names = {name for name, _, _ in decodings(RegimeConfig(vanilla_caches=False, long_windows=(), tokens_per_step=(4,),
                                                           block_step=False), 256, 32)}
    assert names == {"vanilla", "fast", "fast70", "fast50", "fixed4", "fast_prefix", "fast_dual"}
    assert headline({"vanilla": _row(90), "fast": _row(90, tpf=3.0), "fixed4": _row(80), "fast_dual": _row(89)},
                    RegimeConfig(long_windows=()), 256, 32)["vanilla_dual_cost"] is None


def test_a_record_from_before_the_schedules_were_a_list_reads_back():
    old = RegimeConfig.from_dict({"n": 500, "long_windows": [512], "tokens_per_step": 4, "caches": ["dual"]})
    assert old.tokens_per_step == (4,) and old.long_windows == (512,) and old.caches == ("dual",)
    assert RegimeConfig.from_dict({"n": 5}).tokens_per_step == (2, 4, 8)
