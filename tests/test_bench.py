"""bench-step runs at tiny shape on the CPU and writes a well-formed results file (no timing asserted)."""
from __future__ import annotations

import argparse
import json

import pytest

from tspd.bench import step as bench
from tspd.commands import bench_step
from tspd.provenance import device_name


@pytest.mark.slow
def test_bench_step_tiny_shape_writes_results(tmp_path):
    p = argparse.ArgumentParser()
    bench_step.add_arguments(p)
    out = tmp_path / "cpu.json"
    args = p.parse_args(["--shape", "tiny", "--device", "cpu", "--batch", "1,2", "--prompt", "8", "--gen", "16",
                         "--block", "8", "--repeats", "1", "--warmup", "0", "--generate-repeats", "1",
                         "--controllers", "vanilla,tspd+ce", "--fast", "--parity", "--out", str(out)])
    assert bench_step.main(args) == 0
    res = json.loads(out.read_text())
    assert res["shape"] == "tiny" and res["device"] == device_name("cpu") and res["params"] > 0 and "revision" in res
    assert res["peaks"]["matmul_flops"] > 0 and res["peaks"]["copy_bytes_per_s"] > 0
    assert [r["batch"] for r in res["rows"]] == [1, 2]
    for row in res["rows"]:
        for step in ("full_forward", "prefix_step", "dual_step"):
            assert row[step]["seconds"] > 0 and row[step]["floor_seconds"] > 0
        for step in ("full_forward_fast", "prefix_step_fast", "dual_step_fast"):
            assert row[step]["seconds"] > 0
        gen = row["generate"]
        runs = {f"{p}/{c}" for p in ("vanilla", "tspd+ce") for c in ("none", "dual")}
        assert set(gen) == runs | {r + "/fast" for r in runs}
        parity = row["parity"]
        assert parity.pop("dual_step_max_abs_logit_diff") == 0.0        # the same kernels on the same inputs
        assert set(parity) == runs and all(v["same_tokens"] and v["same_nfe"] for v in parity.values())
        assert all(v["host_syncs_per_forward"] is None for v in parity.values())   # counted on CUDA only
        assert row["dual_step"]["kernels"] is None                                  # ... as are kernels
        assert gen["vanilla/none"]["nfe"] == 16                      # 1 token per step
        assert all(v["control_fraction_of_forward"] > 0 for v in gen.values())


def test_a_gpu_bench_where_torch_sees_no_gpu_is_one_line(capsys):
    import torch
    from tspd.cli import main
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    assert main(["bench-step", "--device", "cuda", "--no-generate"]) == 2
    assert "sees no CUDA GPU" in capsys.readouterr().err


def test_cost_model_counts_attention_and_weights():
    cfg = bench.LLaDAConfig(**bench.SHAPES["llada-8b"])
    full = bench.forward_cost(cfg, batch=1, q_len=1152, kv_len=1152, elem=2)
    dual = bench.forward_cost(cfg, batch=1, q_len=32, kv_len=1152, elem=2)
    assert 2 * 7.5e9 * 1152 < full["flops"] < 2 * 8.5e9 * 1152 * 1.2      # ~2 FLOPs per parameter per token
    assert 15e9 < dual["bytes"] < 18e9                                    # one read of ~16 GB of bf16 weights
