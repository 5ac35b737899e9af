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


class BlockSchedule:
    """One block's schedule (:func:`num_transfer_tokens`) as a step's view shows it: ``quota`` [B], the
    tokens each row commits, and ``uniform_quota``, their count when every row has the same, read on the
    host once per block (so a step need not wait for the device to take the sort-free path for 1).
    Every step's pair is made with the schedule, once per block, not by the step."""

    def __init__(self, n_masked: torch.Tensor, steps: int):
        self.quota = num_transfer_tokens(n_masked, steps)
        uniform = [row[0] if len(set(row)) == 1 else None for row in self.quota.T.tolist()]
        self.steps = [dict(quota=q, uniform_quota=u) for q, u in zip(self.quota.unbind(1), uniform)]
        self.past = None    # the view past the schedule's last step (made when a step gets there)

    def at(self, step: int) -> dict:
        """``quota`` and ``uniform_quota`` of step ``step``: 0 past the schedule's last step."""
        if step < len(self.steps):
            return self.steps[step]
        if self.past is None:
            self.past = dict(quota=torch.zeros_like(self.quota[:, 0]), uniform_quota=0)
        return self.past


NO_SCHEDULE = dict(quota=None, uniform_quota=None)   # the view of a controller that reads no schedule
