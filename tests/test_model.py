"""The LLaDA architecture and checkpoint loading, checked against an independent computation."""
from __future__ import annotations

import json
import math

import pytest
import torch

from tspd import load_model, save_model
from tspd.models.loading import CheckpointError

from conftest import random_model


def reference_logits(sd: dict, cfg, ids: torch.Tensor) -> torch.Tensor:
    """LLaDA forward written out from the state dict alone: complex-number RoPE, explicit softmax."""
    pre = "model.transformer."
    H, Hk, D = cfg.n_heads, cfg.kv_heads, cfg.head_dim
    T = ids.shape[1]

    def rms(x, w):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + cfg.rms_norm_eps) * w

    def rope(x):  # x [B, h, T, D]; NeoX pairs (i, i + D/2) rotate as one complex number
        freqs = torch.tensor([cfg.rope_theta ** (-2 * i / D) for i in range(D // 2)], dtype=torch.float64)
        ang = torch.arange(T, dtype=torch.float64)[:, None] * freqs[None]
        z = torch.complex(x[..., : D // 2].double(), x[..., D // 2:].double()) * torch.polar(torch.ones_like(ang), ang)
        return torch.cat([z.real, z.imag], -1).float()

    h = sd[pre + "wte.weight"][ids]
    for i in range(cfg.n_layers):
        b = f"{pre}blocks.{i}."
        a = rms(h, sd[b + "attn_norm.weight"])
        q = (a @ sd[b + "q_proj.weight"].T).view(1, T, H, D).transpose(1, 2)
        k = (a @ sd[b + "k_proj.weight"].T).view(1, T, Hk, D).transpose(1, 2)
        v = (a @ sd[b + "v_proj.weight"].T).view(1, T, Hk, D).transpose(1, 2)
        q, k = rope(q), rope(k)
        out = []
        for head in range(H):
            kh, vh = k[:, head * Hk // H], v[:, head * Hk // H]
            w = torch.softmax(q[:, head] @ kh.transpose(-1, -2) / math.sqrt(D), -1)   # no causal mask
            out.append(w @ vh)
        h = h + torch.cat(out, -1) @ sd[b + "attn_out.weight"].T
        f = rms(h, sd[b + "ff_norm.weight"])
        gate = f @ sd[b + "ff_proj.weight"].T
        h = h + (gate * torch.sigmoid(gate) * (f @ sd[b + "up_proj.weight"].T)) @ sd[b + "ff_out.weight"].T
    return rms(h, sd[pre + "ln_f.weight"]) @ sd[pre + "ff_out.weight"].T


def test_sharded_checkpoint_matches_independent_reference(tmp_path):
    m = random_model(seed=3)
    save_model(m, tmp_path, max_shard_bytes=20_000)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 2          # really sharded
    loaded = load_model(tmp_path)
    ids = torch.tensor([[1, 5, 9, 2, 39, 39, 39, 7]])
    ref = reference_logits({k: v.float() for k, v in m.module.state_dict().items()}, m.config, ids)
    torch.testing.assert_close(loaded(ids), ref, atol=1e-4, rtol=1e-4)
    assert loaded.special.mask == 39 and loaded.special.eos == 38


def test_load_casts_onto_requested_dtype(tmp_path):
    save_model(random_model(), tmp_path)
    m = load_model(tmp_path, dtype="bfloat16")
    assert {p.dtype for p in m.parameters()} == {torch.bfloat16}
    assert not any(p.is_meta for p in m.parameters())


@pytest.mark.parametrize("damage, message", [
    ("no_dir", "no model directory"),
    ("no_config", "config.json is missing"),
    ("no_weights", "no model.safetensors"),
    ("missing_shard", "shards listed"),
    ("bad_type", "model_type"),
])
def test_broken_directories_give_one_line_errors(tmp_path, damage, message):
    d = tmp_path / "ckpt"
    save_model(random_model(), d, max_shard_bytes=20_000)
    if damage == "no_dir":
        d = tmp_path / "nowhere"
    elif damage == "no_config":
        (d / "config.json").unlink()
    elif damage == "no_weights":
        for f in d.glob("model*"):
            f.unlink()
    elif damage == "missing_shard":
        next(d.glob("model-00002-*.safetensors")).unlink()
    elif damage == "bad_type":
        cfg = json.loads((d / "config.json").read_text())
        (d / "config.json").write_text(json.dumps({**cfg, "model_type": "gpt2"}))
    with pytest.raises(CheckpointError, match=message) as err:
        load_model(d)
    assert "\n" not in str(err.value)


def test_missing_and_misshapen_tensors_are_named(tmp_path):
    from safetensors.torch import load_file, save_file
    save_model(random_model(), tmp_path)
    sd = load_file(str(tmp_path / "model.safetensors"))
    del sd["model.transformer.ln_f.weight"]
    save_file(sd, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointError, match="ln_f"):
        load_model(tmp_path)
    sd["model.transformer.ln_f.weight"] = torch.ones(7)
    save_file(sd, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointError, match="shape"):
        load_model(tmp_path)


def test_left_padding_is_invisible(tiny_model):
    ids = torch.tensor([[4, 8, 15, 16, 23, 39, 39]])
    pad = torch.tensor([[38, 38, 38] + ids[0].tolist()])
    mask = torch.tensor([[0, 0, 0] + [1] * ids.shape[1]])
    pos = (mask.cumsum(-1) - 1).clamp_min(0)
    single = tiny_model(ids)
    padded = tiny_model(pad, attention_mask=mask, position_ids=pos)[:, 3:]
    torch.testing.assert_close(padded, single, atol=1e-5, rtol=1e-5)


def test_attention_is_bidirectional(tiny_model):
    ids = torch.tensor([[4, 8, 15, 16, 23, 39]])
    changed = ids.clone()
    changed[0, -1] = 7                      # a change at the last position ...
    assert not torch.allclose(tiny_model(ids)[0, 0], tiny_model(changed)[0, 0])   # ... reaches the first


@pytest.mark.parametrize("window", ["dual", "prefix"])
def test_cached_window_equals_full_forward(tiny_model, window):
    ids = torch.tensor([[4, 8, 15, 16, 23, 42 % 38, 39, 39, 39, 39, 39, 39]])
    full = tiny_model(ids, cache=(kv := tiny_model.new_cache()))
    s, e = 6, 9
    w1 = e if window == "dual" else ids.shape[1]
    part = tiny_model(ids[:, s:w1], position_ids=torch.arange(s, w1)[None], cache=kv, offset=s)
    torch.testing.assert_close(part, full[:, s:w1], atol=1e-5, rtol=1e-5)


def test_window_without_filled_cache_is_an_error(tiny_model):
    with pytest.raises(RuntimeError, match="full forward"):
        tiny_model(torch.tensor([[1, 2]]), cache=tiny_model.new_cache(), offset=4)


def test_rms_norm_is_llada_formula_bit_for_bit():
    """The fused F.rms_norm path equals LLaDA's fp32 formula exactly, in fp32 and bf16 models."""
    from tspd.models.llada import RMSNorm
    torch.manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        norm = RMSNorm(64, 1e-5).to(dtype)
        norm.weight.data.uniform_(0.5, 1.5)
        x = (torch.randn(3, 7, 64) * 3).to(dtype)
        h = x.float()
        ref = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dtype) * norm.weight
        assert torch.equal(norm(x), ref)
