"""LLaDA's per-block transfer schedule (official ``get_num_transfer_tokens``)."""
from __future__ import annotations

import torch


def num_transfer_tokens(n_masked: torch.Tensor, steps: int) -> torch.Tensor:
    """Tokens to commit at each of ``steps`` steps, per row: [B] -> [B, steps].

    Every step gets n // steps; the first n % steps steps get one more (LLaDA Appendix B).
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    base, rem = n_masked // steps, n_masked % steps
    idx = torch.arange(steps, device=n_masked.device)
    return base[:, None] + (idx[None, :] < rem[:, None]).long()
