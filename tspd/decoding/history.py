"""The per-token state H of paper Algorithm 1 (``H <- update(H, p)``), one per ``generate`` call.

For every generated position it keeps what the latest forward that covered it said: the candidate
token, its confidence and logit gap (what Prophet and Learn2PD's End-of-Text Prediction read beyond the
current block), plus the EWMA confidence and its momentum (Appendix A.3, :class:`SmoothedConfidence`).
It keeps only the buffers the controller reads (``keeps``, :data:`tspd.decoding.reads.HISTORY`); the
others stay None, and so do the view's fields that show them.
(What a whole decoding went through, step by step, is its trace: :mod:`tspd.decoding.recorder`.)
"""
from __future__ import annotations

import torch

from tspd.decoding.features import SmoothedConfidence, StepStats, relative_position
from tspd.decoding.reads import HISTORY


class History:
    """H over the generated region [B, L]; updated after each forward, read by each step's view."""

    def __init__(self, batch: int, gen_length: int, block_length: int, mask_id: int, device, keeps=HISTORY):
        def kept(name, make):
            return make() if name in keeps else None
        self.x0 = kept("canvas_x0", lambda: torch.full((batch, gen_length), mask_id, dtype=torch.long, device=device))
        self.conf = kept("canvas_conf", lambda: torch.zeros(batch, gen_length, device=device))
        self.gap = kept("canvas_gap", lambda: torch.zeros(batch, gen_length, device=device))
        self.smoothed = SmoothedConfidence(batch, gen_length, device) if {"ewma", "momentum"} & set(keeps) else None
        self.phi = relative_position(block_length, device)
        self.block_length = block_length

    def update(self, lo: int, hi: int, st: StepStats, active: torch.Tensor) -> None:
        """Fold in the statistics ``st`` of generated positions ``[lo, hi)`` (rows ``active`` observed them)."""
        if self.x0 is not None:
            self.x0[:, lo:hi] = st.x0
        if self.conf is not None:
            self.conf[:, lo:hi] = st.conf.float()
        if self.gap is not None:
            self.gap[:, lo:hi] = st.logit_gap.float()
        if self.smoothed is not None:
            self.smoothed.update(lo, st.conf, rows=active)

    def around(self, start: int) -> dict:
        """What a :class:`tspd.decoding.controllers.StepView` reads of H for the block at ``start``."""
        end, sm = start + self.block_length, self.smoothed
        return dict(ewma=None if sm is None else sm.ewma[:, start:end],
                    momentum=None if sm is None else sm.momentum[:, start:end], phi=self.phi,
                    canvas_x0=self.x0, canvas_conf=self.conf, canvas_gap=self.gap)


__all__ = ["History"]
