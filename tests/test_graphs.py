"""The fast path (tspd.decoding.graphs): static buffers reused across calls decode the same tokens as the eager loop.

On a CPU the runner runs its static-buffer path eagerly (CUDA graphs need a GPU; ``bench-step --fast
--parity`` checks the captured graphs there), so these tests check everything but the capture itself:
window copies, static positions and padding masks reloaded per call, the runner's own KV cache, and
runner reuse and replacement.
"""
from __future__ import annotations

import pytest
import torch
from conftest import prompts, random_model, seeded_net, spied

import tspd
from tspd.decoding.loop import generate
from tspd.decoding.graphs import StepGraphs, step_graphs

CONTROLLERS = [("vanilla", {}, False), ("fast-dllm", {"threshold": 0.5}, False), ("tspd", "net", True),
            ("prophet", {}, False), ("credit", {}, True), ("joint", {"bound": 0.3}, True)]


def controller_kwargs(kw):
    return {"net": seeded_net("tspd", seed=3)} if kw == "net" else kw


@pytest.mark.parametrize("cache", ["none", "prefix", "dual"])
@pytest.mark.parametrize("controller,kw,ce", CONTROLLERS)
def test_fast_path_decodes_the_same_tokens(tiny_model, cache, controller, kw, ce):
    ps = prompts(3)                                             # different lengths: left padding
    run = dict(gen_length=24, block_length=8, controller=controller, controller_kwargs=controller_kwargs(kw), ce=ce, cache=cache)
    eager = generate(tiny_model, ps, **run)
    fast = generate(tiny_model, ps, fast=True, **run)
    assert torch.equal(fast.token_ids, eager.token_ids)
    assert fast.nfe == eager.nfe and fast.steps_per_block == eager.steps_per_block


def test_runner_is_reused_for_one_shape_and_reloads_positions_and_padding(tiny_model):
    a = [[1, 2, 3, 4, 5], [6, 7, 8]]
    b = [[9, 10, 11], [12, 13, 14, 15, 16]]                     # same width, padding on the other row
    run = dict(gen_length=16, block_length=8, controller="fast-dllm", threshold=0.5, cache="dual")
    generate(tiny_model, a, fast=True, **run)
    runner = tiny_model.graphs
    fast_b = generate(tiny_model, b, fast=True, **run)
    assert tiny_model.graphs is runner                # same shape: the same static buffers
    assert torch.equal(fast_b.token_ids, generate(tiny_model, b, **run).token_ids)
    generate(tiny_model, [[1, 2, 3, 4, 5], [5, 4, 3, 2, 1]], fast=True, **run)
    assert tiny_model.graphs is not runner            # no padding: a new runner
    assert tiny_model.graphs.key == (2, 5 + 16, True, False)


def test_runner_forwards_each_window_from_static_buffers(tiny_model):
    model, spy = spied(tiny_model)
    ps = prompts(2)
    generate(model, ps, gen_length=16, block_length=8, controller="vanilla", cache="dual", fast=True)
    runner = model.graphs
    P = runner.key[1] - 16
    windows = [(c["offset"], c["offset"] + c["ids"].shape[1]) for c in spy.calls]
    assert windows[0] == (0, P + 16) and windows[1] == (P, P + 8)            # full, then the block
    step = runner.pos.element_size()
    assert all(c["pos"].data_ptr() == runner.pos.data_ptr() + c["offset"] * step for c in spy.calls)
    assert all(c["attn"] is runner.attn for c in spy.calls)


def test_dream_backbone_fast_path_matches(tmp_path):
    from test_backbones import dream_checkpoint
    model = tspd.load_model(dream_checkpoint(tmp_path))
    ps = prompts(2, seed=7, hi=9)
    for cache in ("prefix", "dual"):
        run = dict(gen_length=16, block_length=8, controller="fast-dllm", threshold=0.6, cache=cache)
        assert torch.equal(generate(model, ps, fast=True, **run).token_ids, generate(model, ps, **run).token_ids)


def test_moe_backbone_runs_the_static_path_but_is_never_captured(tmp_path):
    from test_backbones import moe_checkpoint
    model = tspd.load_model(moe_checkpoint(tmp_path))
    ps = prompts(2, seed=8, hi=9)
    run = dict(gen_length=16, block_length=8, controller="fast-dllm", threshold=0.6, cache="dual")
    assert torch.equal(generate(model, ps, fast=True, **run).token_ids, generate(model, ps, **run).token_ids)
    assert model.graphs.capture is False
    with pytest.raises(ValueError, match="synchronises"):
        StepGraphs(model, 2, 32, cached=True, padded=True, capture=True)


def test_bad_use_is_refused():
    model = random_model()
    with pytest.raises(ValueError, match="CUDA"):
        StepGraphs(model, 1, 16, cached=True, padded=False, capture=True)
    runner = step_graphs(model, 1, 16, cached=True, padded=False)
    with pytest.raises(RuntimeError, match="full forward"):
        runner(torch.zeros(1, 16, dtype=torch.long), 8, 16)
    with pytest.raises(ValueError, match="padding"):
        runner.load(torch.zeros(1, 16, dtype=torch.long), torch.ones(1, 16, dtype=torch.long))


def test_the_runner_is_kept_by_the_loaded_model_and_never_on_the_network(tiny_model):
    run = dict(gen_length=16, block_length=8, controller="vanilla", cache="dual", fast=True)
    generate(tiny_model, prompts(2), **run)
    assert isinstance(tiny_model.graphs, StepGraphs) and "graphs" not in vars(tiny_model.module)
    assert not any(isinstance(v, StepGraphs) for v in vars(tiny_model.module).values())
    with pytest.raises(TypeError, match="takes a LoadedModel"):   # a bare network, even with ids attached
        generate(tiny_model.module, prompts(2), **run)
