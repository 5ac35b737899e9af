"""Which answer positions a training sequence masks: LLaDA's uniform masking and two schemes that keep
earlier lines visible.

LLaDA's SFT objective (Nie et al., 2025, Sec. 2.3 / Eq. 5) masks every answer position independently
with probability ``t ~ U(0, 1]``. Under it an earlier solution line is masked as often as the line
that copies from it, so the route from the question to a number always works and the route through
the worked lines only sometimes: a small model learns to recompute every number from the question and
never reads what it wrote (the probes of :mod:`tspd.training.probes`). At inference the decoder fills a
block left to right in confidence order, so the lines before the one being written are visible.

Schemes (each sample of a batch draws its own; ``mix`` is the share that is not uniform):

- ``uniform``: LLaDA's masking, the paper's objective;
- ``prefix``: a clean prefix up to a random cut inside the answer, every position after it masked
  with probability ``t`` (the state of a decoder that has written the first lines);
- ``block``: semi-autoregressive, as block-wise decoding sees it: blocks before a random block clean,
  that block masked with probability ``t``, later blocks fully masked; only the block is scored;
- ``causal``: a clean prefix, everything after it masked (the first ``1 - t`` of the answer clean): no
  later line can give a masked result away (under the other schemes the next line's copy of a result, or
  the final line, often can), so a result must be computed from the operands written before it.

The loss (:func:`tspd.training.lm.objective.sft_loss`) weights each scored position by ``1/t``, as Eq. 5.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

SCHEMES = ("uniform", "prefix", "block", "causal")


@dataclass(frozen=True)
class Masking:
    scheme: str = "uniform"   # uniform | prefix | block | causal
    mix: float = 0.0          # share of each batch masked by ``scheme``; the rest uniform (LLaDA)
    block_length: int = 32    # the decoder's block (``block`` scheme only)

    def __post_init__(self):
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown masking {self.scheme!r}: expected one of {', '.join(SCHEMES)}")
        if not 0.0 <= self.mix <= 1.0:
            raise ValueError(f"mask mix must be in [0, 1], got {self.mix}")
        if self.block_length < 1:
            raise ValueError(f"block length must be positive, got {self.block_length}")


def mask_answer(answer: torch.Tensor, t: torch.Tensor, eos_id: int | None, masking: Masking,
                generator: torch.Generator | None = None,
                clean: torch.Tensor | None = None,
                until: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(masked, scored, ratio)`` for the answer region ``answer`` ``[B, L]``.

    ``t`` ``[B, 1]`` is each sample's mask ratio. ``masked``, ``[B, L]`` bool: positions replaced by the
    mask token; ``scored``: those whose cross-entropy counts (a subset of ``masked``); ``ratio`` ``[B, 1]``:
    what each scored position's loss is divided by (``t``; for a ``causal`` sample the share of the window
    it masks, which its EOS fill keeps away from 0). The answer's own length (before its EOS fill) bounds
    the ``prefix`` and ``causal`` cuts, so that a cut never falls in the padding.

    ``clean`` ``[B, 1]`` (optional): rows with a positive value are masked ``causal``-ly whatever the
    scheme, with the cut at or after that many tokens (an altered solution, :func:`tspd.tasks.arith.
    altered`, whose altered line must stay visible for the rest of it to make sense). ``until`` ``[B, 1]``
    (optional, with ``clean``): rows with a positive value score only their first ``until`` tokens, and
    their cut falls before that (a partial alteration: what follows is not a solution to learn).
    """
    B, L = answer.shape
    dev = answer.device
    coin = torch.rand(B, L, device=dev, generator=generator) < t
    if clean is not None:
        return _with_clean_prefix(answer, t, eos_id, masking, generator, clean, until)
    if masking.scheme == "uniform" or masking.mix == 0.0:
        return coin, coin, t
    structured = (torch.rand(B, 1, device=dev, generator=generator) < masking.mix)
    pos = torch.arange(L, device=dev).unsqueeze(0)
    if eos_id is None:
        raise ValueError(f"{masking.scheme} masking needs the EOS id (where the answer's fill begins)")
    length = (answer != eos_id).sum(-1, keepdim=True)              # tokens before the EOS fill
    ratio = t
    if masking.scheme == "prefix":
        cut = (torch.rand(B, 1, device=dev, generator=generator) * (length + 1)).long()  # 0..length
        masked = coin & (pos >= cut)
        scored = masked
    elif masking.scheme == "causal":
        cut = ((1 - t) * (length + 1)).long().clamp_max(length)                          # 0..length
        masked = scored = pos >= cut
        ratio = masked.sum(-1, keepdim=True) / L
    else:  # block
        n_blocks = (length.clamp_min(1) - 1) // masking.block_length + 1    # blocks the answer reaches
        block = (torch.rand(B, 1, device=dev, generator=generator) * n_blocks).long()
        start = block * masking.block_length
        inside = (pos >= start) & (pos < start + masking.block_length)
        masked = (coin & inside) | (pos >= start + masking.block_length)
        scored = coin & inside
    return (torch.where(structured, masked, coin), torch.where(structured, scored, coin),
            torch.where(structured, ratio, t))


def _with_clean_prefix(answer, t, eos_id, masking, generator, clean, until=None):
    """:func:`mask_answer` for a batch with altered rows: those causal after their clean prefix, scored up
    to ``until`` where it is positive."""
    if eos_id is None:
        raise ValueError("altered solutions need the EOS id (where the answer's fill begins)")
    masked, scored, ratio = mask_answer(answer, t, eos_id, masking, generator)
    L = answer.shape[1]
    length = (answer != eos_id).sum(-1, keepdim=True)
    pos = torch.arange(L, device=answer.device).unsqueeze(0)
    learned = torch.ones_like(pos, dtype=torch.bool)
    if until is not None:   # score up to ``until``; the cut leaves at least its last token masked
        learned = (until <= 0) | (pos < until)
        length = torch.where(until > 0, torch.minimum(length, until - 1), length)
    cut = clean + ((1 - t) * (length - clean + 1)).long().clamp(min=0)
    cut = torch.minimum(cut, length)
    forced = pos >= cut
    kept = forced & learned
    altered = clean > 0
    return (torch.where(altered, forced, masked), torch.where(altered, kept, scored),
            torch.where(altered, kept.sum(-1, keepdim=True) / L, ratio))


__all__ = ["Masking", "SCHEMES", "mask_answer"]
