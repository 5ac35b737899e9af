"""KV caches: exact at every block's first (full) forward, batch-independent for every controller."""
from __future__ import annotations

import pytest
import torch

from tspd.decoding.controllers.learn2pd import Learn2PD
from tspd.decoding.controllers.tspd import TSPD
from tspd.decoding.features import step_stats
from tspd.decoding.loop import generate

from conftest import MASK, prompts, random_model, seeded_net, spied

GEN, BLOCK = 32, 8


@pytest.mark.parametrize("cache", ["prefix", "dual"])
@pytest.mark.parametrize("controller", ["vanilla", "fast-dllm"])
def test_first_step_of_each_block_equals_the_uncached_forward(cache, controller):
    m, spy = spied(random_model(seed=4, scale=0.8))
    out = generate(m, prompts(3, seed=2), gen_length=GEN, block_length=BLOCK, controller=controller, cache=cache,
                   record_trace=True)
    tr, P = out.trace, out.prompt_length
    firsts = [t for t in range(out.nfe) if t == 0 or tr.block[t] != tr.block[t - 1]]
    assert len(firsts) == GEN // BLOCK
    for t in firsts:
        call = spy.calls[t]
        assert call["offset"] == 0 and call["ids"].shape[1] == P + GEN           # a full forward ...
        fresh = spy.model(call["ids"], attention_mask=call["attn"], position_ids=call["pos"])[:, P:]
        assert torch.equal(call["logits"], fresh)           # ... equal to no cache, bit for bit (generated rows only)
        logits = fresh[..., :m.config.vocab_size].clone()
        logits[..., MASK] = float("-inf")
        st = step_stats(logits)
        assert torch.equal(tr.conf[t], st.conf) and torch.equal(tr.x0[t], st.x0)
    cached = [t for t in range(out.nfe) if t not in firsts]
    assert cached and all(spy.calls[t]["offset"] > 0 for t in cached)            # the cache was used
    width = {"prefix": lambda c: P + GEN - c["offset"], "dual": lambda c: BLOCK}[cache]
    assert all(spy.calls[t]["ids"].shape[1] == width(spy.calls[t]) for t in cached)


def test_first_block_of_cached_and_uncached_runs_agree():
    """Before any cached forward, the three modes have seen identical logits and so made identical commits."""
    m = random_model(seed=4, scale=0.8)
    runs = {c: generate(m, prompts(2, seed=3), gen_length=GEN, block_length=BLOCK, cache=c, record_trace=True)
            for c in ("none", "prefix", "dual")}
    for c in ("prefix", "dual"):
        assert torch.equal(runs[c].trace.conf[0], runs["none"].trace.conf[0])
        assert torch.equal(runs[c].trace.committed[0], runs["none"].trace.committed[0])


def learned(name: str):
    return TSPD(net=seeded_net("tspd", hidden=8)) if name == "tspd" else Learn2PD(net=seeded_net("learn2pd"))


@pytest.mark.parametrize("cache", ["none", "prefix", "dual"])
@pytest.mark.parametrize("controller", ["prophet", "credit", "learn2pd", "tspd"])
def test_batch_of_8_equals_one_prompt_at_a_time(controller, cache):
    m = random_model(seed=7, scale=0.8)
    ps = prompts(8, seed=11)
    def pick():   # a learned controller with seeded in-memory weights, or the controller by name
        return dict(controller=learned(controller)) if controller in ("tspd", "learn2pd") else dict(controller=controller)

    kw = dict(gen_length=16, block_length=8, cache=cache, ce=True)
    batch = generate(m, ps, **pick(), **kw)
    for i, p in enumerate(ps):
        one = generate(m, [p], **pick(), **kw)
        assert batch.token_ids[i].tolist() == one.token_ids[0].tolist()
        assert batch.nfe_per_sample[i] == one.nfe


def test_egp_under_a_cache_reproduces_vanilla_under_the_same_cache():
    m = random_model(seed=5, scale=0.8)
    ps = prompts(8, seed=1)
    for cache in ("prefix", "dual"):
        van = generate(m, ps, gen_length=GEN, block_length=BLOCK, cache=cache)
        egp = generate(m, ps, gen_length=GEN, block_length=BLOCK, cache=cache, controller="egp",
                       controller_kwargs={"reference": van.token_ids})
        assert torch.equal(egp.token_ids, van.token_ids)


@pytest.mark.parametrize("cache", ["none", "dual"])
def test_controller_features_do_not_depend_on_the_batch(cache):
    """A row that finished its block idles while others decode; its traces (EWMA, momentum, CE) must not move."""
    from tspd.decoding.controllers import make_controller
    from tspd.training.traces import Recorder

    m = random_model(seed=7, scale=0.8)
    ps = prompts(8, seed=11)
    kw = dict(gen_length=16, block_length=8, cache=cache, ce=True)
    rb = Recorder(make_controller("fast-dllm", threshold=0.5))
    batch = generate(m, ps, controller=rb, **kw)
    assert len({tuple(r) for r in batch.steps_per_block}) > 1          # rows really finish blocks at different steps
    for i, p in enumerate(ps):
        r1 = Recorder(make_controller("fast-dllm", threshold=0.5))
        generate(m, [p], controller=r1, **kw)
        mine = [s["features"][i] for s in rb.steps if s["masked"][i].any()]
        alone = [s["features"][0] for s in r1.steps]
        assert len(mine) == len(alone)
        for a, b in zip(mine, alone):
            assert torch.allclose(a, b, atol=1e-5)
