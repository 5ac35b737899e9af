"""Per-token statistics of one denoising step, and their running averages over the steps.

Step-local (paper Section 3.2, Eq. 2): top-1 candidate, its confidence c = max_v p(v), predictive
entropy H = -sum_v p log p, top-1/top-2 probability margin and raw logit gap.
Temporal (Appendix A.3): EWMA confidence cbar_t = alpha c_t + (1 - alpha) cbar_{t+1} with alpha = 0.25 and
its one-step difference (momentum). All functions are pure and vectorised over [B, L].
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


def gumbel_argmax(logits: torch.Tensor, temperature: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """argmax of Gumbel-perturbed logits at ``temperature`` (LLaDA samples in float64); greedy at 0."""
    if temperature <= 0:
        return logits.argmax(-1)
    l64 = logits.double()
    u = torch.rand(l64.shape, dtype=torch.float64, device=l64.device, generator=generator).clamp_min(1e-300)
    return (l64 / temperature - torch.log(-torch.log(u))).argmax(-1)


@dataclass
class StepStats:
    """Statistics of every position of a window, each [B, L] (x0 long, the rest float)."""
    x0: torch.Tensor          # candidate token (argmax, or Gumbel sample)
    conf: torch.Tensor        # p(x0): the clean softmax at the candidate
    entropy: torch.Tensor     # H(p)
    margin: torch.Tensor      # p1 - p2
    logit_gap: torch.Tensor   # l1 - l2 (Prophet's signal)


def step_stats(logits: torch.Tensor, temperature: float = 0.0, dtype: torch.dtype = torch.float32,
               generator: torch.Generator | None = None) -> StepStats:
    """Softmax statistics of ``logits`` [B, L, V], computed in ``dtype``.

    References differ here: LLaDA's and Prophet's code use bf16, Fast-dLLM float64, dInfer float32.
    """
    logits = logits.to(dtype)
    x0 = gumbel_argmax(logits, temperature, generator)
    logp = torch.log_softmax(logits, dim=-1)
    p = logp.exp()
    top_l = logits.topk(2, dim=-1).values
    top_p = p.topk(2, dim=-1).values
    return StepStats(
        x0=x0,
        conf=p.gather(-1, x0[..., None]).squeeze(-1),
        entropy=-(p * logp).nan_to_num().sum(-1),
        margin=top_p[..., 0] - top_p[..., 1],
        logit_gap=(top_l[..., 0] - top_l[..., 1]),
    )


class SmoothedConfidence:
    """EWMA confidence and momentum per canvas position, updated only where a step observed it."""

    def __init__(self, batch: int, length: int, device, alpha: float = 0.25):
        self.alpha = alpha  # paper Appendix A.3
        self.ewma = torch.zeros(batch, length, device=device)
        self.momentum = torch.zeros(batch, length, device=device)
        self.seen = torch.zeros(batch, length, dtype=torch.bool, device=device)

    def update(self, start: int, conf: torch.Tensor, rows: torch.Tensor | None = None) -> None:
        """Fold in the confidences ``conf`` [B, W] of canvas positions [start, start + W).

        ``rows`` [B] bool: only these rows observed the step (a row that already finished the block
        idles while others decode; its averages must not depend on the rest of the batch).
        """
        sl = slice(start, start + conf.shape[1])
        prev, seen = self.ewma[:, sl], self.seen[:, sl]
        conf = conf.float()
        new = torch.where(seen, self.alpha * conf + (1 - self.alpha) * prev, conf)
        mom = torch.where(seen, new - prev, torch.zeros_like(new))
        if rows is not None:
            new = torch.where(rows[:, None], new, prev)
            mom = torch.where(rows[:, None], mom, self.momentum[:, sl])
        self.momentum[:, sl] = mom
        self.ewma[:, sl] = new
        self.seen[:, sl] = seen | (rows[:, None] if rows is not None else True)


def relative_position(block_length: int, device) -> torch.Tensor:
    """phi(i) = i / (L_b - 1) for the positions of a block (paper Eq. 2)."""
    return torch.arange(block_length, device=device, dtype=torch.float32) / max(block_length - 1, 1)
