"""``DecodeConfig``: checked once on construction, resolved against a checkpoint, taken whole by generate."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from tspd import DecodeConfig, generate
from tspd.validate import UsageError


@pytest.mark.parametrize("bad, message", [
    (dict(cache="full"), "cache must be one of"),
    (dict(policy="nope"), "unknown policy"),
    (dict(policy="vanilla", policy_kwargs={"threshold": 0.9}), "takes no threshold"),
    (dict(policy="fast-dllm", policy_kwargs={"threshold": 1.5}), r"threshold must be in \(0, 1\]"),
    (dict(gen_length=30, block_length=8), "not a multiple of block_length"),
    (dict(gen_length=32, block_length=8, steps=6), "multiple of the number of blocks"),
    (dict(temperature=-1.0), "temperature must be >= 0"),
    (dict(confidence_dtype="int8"), "unknown confidence_dtype"),
])
def test_bad_settings_fail_on_construction(bad, message):
    with pytest.raises(UsageError, match=message):
        DecodeConfig(**bad)


def test_of_replace_and_resolved():
    base = DecodeConfig.of(policy="fast-dllm", threshold=0.8)
    assert base.policy_kwargs == {"threshold": 0.8}
    assert DecodeConfig.of(base, threshold=0.7).policy_kwargs == {"threshold": 0.7}
    with pytest.raises(UsageError, match="no colour"):
        base.replace(colour="red")
    r = base.resolved(_config_with_window(64, 32))
    assert (r.gen_length, r.block_length, r.steps, r.num_blocks) == (64, 32, 64, 2)
    assert r.resolved(None) is r                                   # nothing left to fill
    assert r.replace(gen_length=128).resolved(None).steps == 128   # default steps follow the window
    assert r.replace(steps=32).replace(gen_length=128).steps == 32  # an explicit budget is kept
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.cache = "dual"


def test_equal_decodings_compare_equal():
    assert DecodeConfig(ce=True, ce_kwargs={"tau": 0.6}) == DecodeConfig(ce=True)      # 0.6 is CE's default
    assert DecodeConfig(ce={"H": 10}) == DecodeConfig(ce=True, ce_kwargs={"H": 10})
    assert DecodeConfig(ce=False, ce_kwargs={"H": 10}) == DecodeConfig()                # CE off: no settings
    assert DecodeConfig(confidence_dtype=torch.float64).confidence_dtype == "float64"


def test_generate_takes_the_config_whole_or_as_overrides(tiny_model):
    prompts = [[5, 6, 7, 8], [9, 10, 11, 12]]
    config = DecodeConfig(policy="fast-dllm", policy_kwargs={"threshold": 0.5}, gen_length=16, block_length=8,
                          cache="dual")
    whole = generate(tiny_model, prompts, config)
    spelled = generate(tiny_model, prompts, gen_length=16, block_length=8, policy="fast-dllm", threshold=0.5,
                       cache="dual")
    overridden = generate(tiny_model, prompts, config.replace(cache="none"), cache="dual")
    assert torch.equal(whole.token_ids, spelled.token_ids) and whole.nfe == spelled.nfe
    assert torch.equal(whole.token_ids, overridden.token_ids) and whole.nfe == overridden.nfe
    with pytest.raises(UsageError, match="cache must be one of"):
        generate(tiny_model, prompts, config, cache="full")


def _config_with_window(gen_length: int, block_length: int):
    """A stand-in for a loaded model whose checkpoint names its window (tspd_task)."""
    from tspd.models.config import LLaDAConfig
    return LLaDAConfig(extra={"tspd_task": {"gen_length": gen_length, "block_length": block_length}})
