"""The cached view of a block (tspd.training.lm.cached_view): the caches' staleness, and nothing else, separates it
from Eq. 5's loss of the same block."""
import pytest
import torch
import torch.nn.functional as F

from conftest import EOS, MASK, random_model
from tspd.training.lm.cached_view import cached_view_loss
from tspd.training.lm.data import Batch

P, L, BLOCK = 8, 32, 8


def batch(seed: int = 0, rows: int = 3) -> Batch:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, EOS, (rows, P + L), generator=g)
    attn = torch.ones_like(ids)
    attn[0, :2] = 0                                    # a left-padded prompt
    pos = (attn.cumsum(-1) - 1).clamp_min(0)
    return Batch(ids, attn, pos, P)


def fresh_loss(net, b: Batch, block: int, masked: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Eq. 5's loss of the block's masked positions, every position computed from the state itself (no cache)."""
    answer = b.input_ids[:, P:]
    noisy = torch.cat([b.input_ids[:, :P], torch.where(masked, torch.full_like(answer, MASK), answer)], 1)
    logits = net(noisy, attention_mask=b.attention_mask, position_ids=b.position_ids, logits_from=P)
    s, e = block * BLOCK, (block + 1) * BLOCK
    ce = F.cross_entropy(logits[:, s:e].reshape(-1, logits.shape[-1]), answer[:, s:e].reshape(-1),
                         reduction="none").view(answer.shape[0], BLOCK)
    return ((ce * masked[:, s:e] / t).sum(-1) / L).mean()


@pytest.mark.parametrize("dual", [False, True])
def test_an_all_masked_block_reads_no_stale_key(dual):
    """At t = 1 the block's state is its starting state, so the cache holds what a fresh forward computes."""
    net, b = random_model(scale=0.2).module, batch()
    t = torch.ones(3, 1)
    masked = (torch.arange(L) >= 2 * BLOCK).expand(3, L)
    got = cached_view_loss(net, b, MASK, EOS, BLOCK, block=2, dual=dual, t=t)
    assert torch.allclose(got, fresh_loss(net, b, 2, masked, t), atol=1e-5)


def test_a_written_block_reads_stale_keys_and_trains():
    """With half the block written, the earlier blocks' keys are those of the all-masked start: the loss departs
    from the fresh one, and its gradient reaches the weights."""
    net, b = random_model(scale=0.2).module, batch(1)
    g = torch.Generator().manual_seed(5)
    t = torch.full((3, 1), 0.5)
    got = cached_view_loss(net, b, MASK, EOS, BLOCK, generator=g, block=1, dual=False, t=t)
    g = torch.Generator().manual_seed(5)
    masked = ((torch.rand(3, L, generator=g) < t) & (torch.arange(L) >= BLOCK) & (torch.arange(L) < 2 * BLOCK)) \
        | (torch.arange(L) >= 2 * BLOCK)
    assert not torch.allclose(got, fresh_loss(net, b, 1, masked, t), atol=1e-4)
    got.backward()
    assert net.model.transformer["wte"].weight.grad.abs().sum() > 0


def test_the_drawn_block_is_one_the_answers_reach():
    """Blocks of EOS fill alone are never drawn: with answers of 9 tokens only blocks 0 and 1 can be."""
    net, b = random_model(scale=0.2).module, batch(2)
    b.input_ids[:, P + 9:] = EOS
    seen = set()
    for seed in range(12):
        calls = []
        spy = lambda ids, **kw: calls.append(kw.get("offset", 0)) or net(ids, **kw)   # noqa: E731
        spy.new_cache = net.new_cache
        cached_view_loss(spy, b, MASK, EOS, BLOCK, generator=torch.Generator().manual_seed(seed), dual=True)
        seen.add((calls[1] - P) // BLOCK)
    assert seen == {0, 1}


def test_the_cached_view_is_refused_where_it_is_not_built_for():
    from tspd.training.lm.config import LMTrainConfig
    with pytest.raises(ValueError, match="--arch dream"):
        LMTrainConfig(out="", arch="dream", cache_mix=0.3)
    with pytest.raises(ValueError, match="diffusion objective only"):
        LMTrainConfig(out="", arch="dream", objective="ar", cache_mix=0.3)
    assert LMTrainConfig(out="", arch="llada-moe", cache_mix=0.3).cache_mix == 0.3
