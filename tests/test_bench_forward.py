"""bench-forward: its levers keep the logits, its kernel kinds read CUDA names right (no timing asserted)."""
from __future__ import annotations

import json

import pytest
import torch

from tspd.bench import forward
from tspd.bench.step import build_model
from tspd.commands import bench_forward
from tspd.models import pointwise
from tspd.validate import UsageError


@pytest.mark.parametrize("name, kind", [
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>", "attention"),
    ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80", "attention"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3", "attention"),
    ("nvjet_tst_256x128_64x4_2x1_v_bz_coopA_NNT", "matmul"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", "matmul"),
    ("triton_per_fused__to_copy_mean_mul_pow_rsqrt_0", "compiled"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>", "norm"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float>", "copy"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel>", "elementwise"),
    ("void at::native::reduce_kernel<512, 1>", "reduce"),
    ("some_kernel_nobody_named", "other"),
])
def test_kernel_kinds_by_name(name, kind):
    assert forward.kernel_kind(name) == kind


def test_the_forward_levers_keep_the_logits_and_are_recorded(tmp_path):
    out = tmp_path / "{device}.json"
    args = bench_forward.arguments(["--shape", "tiny", "--device", "cpu", "--prompt", "8", "--gen", "16", "--block", "8",
                          "--repeats", "1", "--warmup", "0", "--out", str(out)])   # the CPU's levers: eager, fused
    assert bench_forward.main(args) == 0
    res = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert list(res["variants"]) == ["eager", "fused"] and res["command"].startswith("python -m tspd bench-forward")
    fused = res["variants"]["fused"]
    assert fused["max_abs_logit_diff"] < 1e-4 and fused["same_argmax"] and fused["kernels"] is None   # no CUDA
    mm = res["matmuls"]
    assert [mm[k]["n"] for k in ("qkv", "gate_up")] == [3 * 256, 2 * 768] and mm["head"]["m"] == 16
    assert mm["forward_total_seconds"] > 0 and res["attention"]["default"] > 0


def test_levers_are_a_prefix_in_order():
    with pytest.raises(UsageError, match="prefix"):
        forward.measure(bench_forward.arguments(["--variants", "fused", "--device", "cpu"]), "x")


def test_compiled_chains_switch_every_user_and_back():
    model = build_model("tiny", torch.device("cpu"), torch.float32)
    users = pointwise.use_compiled(model.module)
    assert users == 6 * 3 + 1 and pointwise.is_compiled(model.module)   # 2 norms + 1 block per layer, ln_f
    assert pointwise.use_compiled(model.module, on=False) == users and not pointwise.is_compiled(model.module)


def test_the_eager_chains_are_the_reference_formulas():
    g = torch.Generator().manual_seed(0)
    x, gate = torch.randn(2, 3, 5, 8, generator=g), torch.randn(4, 6, generator=g)
    cos, sin = torch.randn(1, 1, 5, 8, generator=g), torch.randn(1, 1, 5, 8, generator=g)
    half = torch.cat([-x[..., 4:], x[..., :4]], dim=-1)
    assert torch.equal(pointwise.rope(x, cos, sin), x * cos + half * sin)
    assert torch.allclose(pointwise.swiglu(gate, x[0, 0, :4, :6]), gate * torch.sigmoid(gate) * x[0, 0, :4, :6])
    w = torch.randn(8, generator=g)
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
    assert torch.allclose(pointwise.rms_norm(x, w, 1e-5), want, atol=1e-6)


def test_chains_are_compiled_by_default_only_on_a_cuda_gpu(monkeypatch):
    import importlib.util
    assert not pointwise.compiles_here(torch.device("cpu"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)    # a GPU install without Triton
    assert not pointwise.compiles_here(torch.device("cuda"))
