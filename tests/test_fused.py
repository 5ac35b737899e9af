"""Fused projections (tspd.models.fused): q/k/v and gate/up as one matmul each give the unfused network's logits
and tokens, on every backbone; the CPU default leaves networks unfused, and a fused one is never saved."""
from __future__ import annotations

import pytest
import torch
from test_backbones import dream_checkpoint, moe_checkpoint, random_ids

from tspd import generate, load_model
from tspd.tasks import arith
from tspd.models.fused import is_fused
from tspd.models.loading import resolve_path, save_model


@pytest.mark.parametrize("kind", ["llada", "dream", "llada-moe"])
def test_fused_projections_give_the_same_logits(tmp_path, kind):
    directory = {"llada": lambda: resolve_path("tiny-arith"), "dream": lambda: dream_checkpoint(tmp_path / "d"),
                 "llada-moe": lambda: moe_checkpoint(tmp_path / "m")}[kind]()
    plain, fused = load_model(directory), load_model(directory, fuse=True)
    assert not is_fused(plain.module) and is_fused(fused.module)           # the CPU default: unfused
    ids = random_ids(2, 24, seed=1) % plain.module.config.vocab_size
    with torch.no_grad():
        torch.testing.assert_close(fused.module(ids), plain.module(ids), atol=1e-5, rtol=1e-5)
    assert not any(n.endswith(("q_proj.weight", "up_proj.weight", "gate_proj.weight", "ff_proj.weight"))
                   for n, _ in fused.module.named_parameters())            # the parts are gone, not kept twice


@pytest.mark.parametrize("cache", ["none", "dual"])
def test_a_fused_model_decodes_the_same_tokens(cache):
    prompts = [arith.prompt(p) for p in arith.load_split("test", 4)]
    out = [generate(load_model("tiny-arith", fuse=f), prompts, controller="fast-dllm", threshold=0.9, cache=cache)
           for f in (False, True)]
    assert torch.equal(out[0].token_ids, out[1].token_ids) and out[0].nfe == out[1].nfe


def test_a_fused_network_is_not_saved(tmp_path):
    with pytest.raises(ValueError, match="cannot be saved"):
        save_model(load_model("tiny-arith", fuse=True), tmp_path)
