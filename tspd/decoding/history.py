"""The per-token state H of paper Algorithm 1 (``H <- update(H, p)``), one per ``generate`` call.

For every generated position it keeps what the latest forward that covered it said: the candidate
token, its confidence and logit gap (what Prophet and Learn2PD's End-of-Text Prediction read beyond the
current block), plus the EWMA confidence and its momentum (Appendix A.3, :class:`SmoothedConfidence`).
(What a whole decoding went through, step by step, is its trace: :mod:`tspd.decoding.recorder`.)
"""
from __future__ import annotations

import torch

from tspd.decoding.features import SmoothedConfidence, StepStats, relative_position


class History:
    """H over the generated region [B, L]; updated after each forward, read by each step's view."""

    def __init__(self, batch: int, gen_length: int, block_length: int, mask_id: int, device):
        self.x0 = torch.full((batch, gen_length), mask_id, dtype=torch.long, device=device)
        self.conf = torch.zeros(batch, gen_length, device=device)
        self.gap = torch.zeros(batch, gen_length, device=device)
        self.smoothed = SmoothedConfidence(batch, gen_length, device)
        self.phi = relative_position(block_length, device)
        self.block_length = block_length

    def update(self, lo: int, hi: int, st: StepStats, active: torch.Tensor) -> None:
        """Fold in the statistics ``st`` of generated positions ``[lo, hi)`` (rows ``active`` observed them)."""
        self.x0[:, lo:hi] = st.x0
        self.conf[:, lo:hi] = st.conf.float()
        self.gap[:, lo:hi] = st.logit_gap.float()
        self.smoothed.update(lo, st.conf, rows=active)

    def around(self, start: int) -> dict:
        """What a :class:`tspd.decoding.controllers.StepView` reads of H for the block at ``start``."""
        end = start + self.block_length
        return dict(ewma=self.smoothed.ewma[:, start:end], momentum=self.smoothed.momentum[:, start:end], phi=self.phi,
                    canvas_x0=self.x0, canvas_conf=self.conf, canvas_gap=self.gap)


def block_stats(st: StepStats, lo: int, hi: int) -> StepStats:
    """The statistics of positions ``[lo, hi)`` of a window (the current block inside it)."""
    return StepStats(*(getattr(st, f)[:, lo:hi] for f in ("x0", "conf", "entropy", "margin", "logit_gap")))


__all__ = ["History", "block_stats"]
