"""The block as Fast-dLLM's caches show it: a training view in which the keys and values outside the block are stale.

Fast-dLLM's prefix cache (Wu et al., 2025; the paper's Table 4) computes every position once at a block's start,
when the block is still all masks, and reuses the prompt's and earlier blocks' keys and values for every later
step of the block; its dual cache reuses the masked suffix's too. Within a block the decoder's steps then read
earlier lines through representations that have not seen what the block has written since. LLaDA-8B tolerates
this (Fast-dLLM: within a point on GSM8K); a 4-layer model trained on bidirectional constraints does not: on
``tiny-styled`` the prefix cache turns right lines into hours that no longer add up (issue 67). LLaDA's objective
(Sec. 2.3 / Eq. 5) never shows a model this view, so a share of ``train-lm``'s steps (``--cache-mix``) may:

1. a block ``k`` the answers reach is drawn; the state at its start is built (earlier blocks clean, the block and all after it
   masked) and computed once without gradients, keeping every position's keys and values (the cache);
2. the block's training state (masked with probability ``t``, as the ``block`` scheme of
   :mod:`tspd.training.masking`; later blocks masked) is computed through that cache, as the decoder computes it:
   the block and everything after it fresh (prefix cache), or the block alone (dual cache), drawn evenly;
3. the loss is Eq. 5's on the block's masked positions (1/t-weighted, over the answer's length).

The model, its confidences and what it is asked to predict are LLaDA's; only which keys it reads is the caches'.
"""
from __future__ import annotations

import torch

from tspd.training.lm.data import Batch
from tspd.training.lm.objective import eq5, noised


def cached_view_loss(model, batch: Batch, mask_id: int, eos_id: int, block_length: int, eps: float = 1e-3,
                     generator: torch.Generator | None = None, dual: bool | None = None,
                     block: int | None = None, t: torch.Tensor | None = None) -> torch.Tensor:
    """Eq. 5's loss of one block as the prefix (``dual`` False) or dual (True; drawn evenly when None) cache computes
    it: the keys and values outside the window come from a forward of the block's starting state. ``block``: its
    index, drawn when None among the blocks the batch's longest answer reaches before its EOS fill (a fill a model
    predicts from the first step). ``t`` ``[B, 1]``: each row's mask ratio (drawn in ``(eps, 1]`` when None).
    ``model`` must take ``cache`` / ``offset`` (LLaDA's and LLaDA-MoE's layouts)."""
    ids, P = batch.input_ids, batch.prompt_width
    answer = ids[:, P:]
    B, L = answer.shape
    dev = ids.device
    n_blocks = (int((answer != eos_id).sum(-1).max()) - 1) // block_length + 1
    if block is None:
        block = int(torch.randint(n_blocks, (1,), device=dev, generator=generator))
    if dual is None:
        dual = bool(torch.rand(1, device=dev, generator=generator) < 0.5)
    s, e = block * block_length, (block + 1) * block_length
    pos = torch.arange(L, device=dev)
    if t is None:
        t = eps + (1 - eps) * torch.rand(B, 1, device=dev, generator=generator)
    coin = torch.rand(B, L, device=dev, generator=generator) < t
    inside = (pos >= s) & (pos < e)
    masked = (coin & inside) | (pos >= e)       # the block's state at a step: later blocks all masks
    start = (pos >= s).expand(B, L)              # its state at the block's first step: the block all masks
    cache = model.new_cache()
    with torch.no_grad():
        model(noised(ids, P, start, mask_id), attention_mask=batch.attention_mask, position_ids=batch.position_ids,
              cache=cache, logits_to=0)
    w0, w1 = P + s, P + (e if dual else L)
    logits = model(noised(ids, P, masked, mask_id)[:, w0:w1], attention_mask=batch.attention_mask,
                   position_ids=batch.position_ids[:, w0:w1], cache=cache, offset=w0, logits_to=block_length)
    return eq5(logits, answer[:, s:e], coin[:, s:e], t, L)


__all__ = ["cached_view_loss"]
