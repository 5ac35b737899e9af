"""Conditional log-likelihood of a masked diffusion LM: LLaDA's Monte-Carlo estimate.

A masked diffusion LM has no left-to-right factorisation; LLaDA (Nie et al., 2025, Sec. 2.4 / Eq. 6 and
App. B.6, its ``get_log_likelihood.py`` and lm-eval wrapper ``eval_llada.py``) bounds
``log p(r | c)`` from below by

    E_{l ~ U{1..L}} E_{l positions of r masked} [ (L / l) * sum over masked i of log p(r_i | c, masked r) ]

with ``L = len(r)`` and estimates it with ``mc_num`` samples, ``batch`` at a time. As in LLaDA, the ``l``
of one batch are stratified: ``k ~ U{1..L}``, then ``l_j = round(k + j L / batch)`` wrapped into 1..L,
so each ``l_j`` is uniform and a batch covers the mask ratios evenly; which positions are masked is
a random permutation per sample. The noise comes from a generator seeded with ``seed`` per request,
so an estimate does not depend on the order, batch or process that computes it (and every
continuation of one length sees the same masks: common random numbers for ranking choices).

``greedy_suffix`` is LLaDA's ``suffix_greedy_prediction``: decode the continuation's positions from
all-masked, one token per forward (the most confident one), and report whether that gives ``r``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def encode_pair(tokenizer, context: str, continuation: str, add_special_tokens: bool = False
                ) -> tuple[list[int], list[int]]:
    """Token ids of ``context`` and ``continuation`` as lm-eval and LLaDA split them: trailing spaces of the
    context move to the continuation, the pair is tokenized whole and the context's tokens cut off."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        continuation, context = context[-spaces:] + continuation, context[:-spaces]
    whole = tokenizer(context + continuation, add_special_tokens=add_special_tokens)["input_ids"]
    prefix = tokenizer(context, add_special_tokens=add_special_tokens)["input_ids"] if context else []
    return list(prefix), list(whole[len(prefix):])


def _logits(model, ids: torch.Tensor) -> torch.Tensor:
    """Float32 logits over the real vocabulary (the head may carry padding rows)."""
    return model(ids)[..., :model.config.vocab_size].float()


@torch.no_grad()
def mc_loglikelihood(model, prefix: list[int], target: list[int], mc_num: int = 128, batch: int = 32,
                     seed: int = 0) -> tuple[float, int]:
    """``(estimate of log p(target | prefix), forwards run)``; ``mc_num`` must be a multiple of ``batch``."""
    L, P = len(target), len(prefix)
    if L == 0:
        return 0.0, 0
    batch = min(batch, mc_num)
    if mc_num % batch:
        raise ValueError(f"mc_num {mc_num} is not a multiple of batch {batch}")
    g = torch.Generator().manual_seed(int(seed))
    device, mask_id = model.device, model.special.mask
    seq = torch.tensor([prefix + target], dtype=torch.long).repeat(batch, 1)
    slots = torch.arange(L)
    total = 0.0
    for _ in range(mc_num // batch):
        k = int(torch.randint(1, L + 1, (), generator=g))
        lengths = torch.round(torch.linspace(float(k), k + (batch - 1) * (L / batch), steps=batch)).long()
        lengths = (lengths - 1) % L + 1                                   # masked tokens per sample, 1..L
        masked = slots[None, :] < lengths[:, None]
        masked = torch.stack([row[torch.randperm(L, generator=g)] for row in masked])
        masked = torch.cat([torch.zeros(batch, P, dtype=torch.bool), masked], 1)
        noisy = torch.where(masked, torch.full_like(seq, mask_id), seq)
        logits = _logits(model, noisy.to(device))
        weight = (L / lengths.float())[:, None].expand(batch, P + L)      # 1 / mask ratio
        m = masked.to(device)
        nll = F.cross_entropy(logits[m], seq.to(device)[m], reduction="none") * weight.to(device)[m]
        total += float(nll.sum()) / batch
    return -total / (mc_num // batch), mc_num // batch


@torch.no_grad()
def greedy_suffix(model, prefix: list[int], target: list[int]) -> tuple[bool, int]:
    """``(whether greedy decoding of len(target) masked positions after prefix gives target, forwards)``."""
    L, P = len(target), len(prefix)
    if L == 0:
        return True, 0
    mask_id = model.special.mask
    seq = torch.tensor([prefix + [mask_id] * L], dtype=torch.long, device=model.device)
    for _ in range(L):
        masked = seq[0] == mask_id
        logits = _logits(model, seq)[0][masked]
        if mask_id < logits.shape[-1]:
            logits[:, mask_id] = float("-inf")                           # [MASK] is never a candidate
        x0 = logits.argmax(-1)
        conf = torch.softmax(logits, -1).gather(-1, x0[:, None])[:, 0]
        best = int(conf.argmax())
        where = masked.nonzero()[:, 0]
        seq[0, where[best]] = x0[best]
    return seq[0, P:].tolist() == list(target), L
