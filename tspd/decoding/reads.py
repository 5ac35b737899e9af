"""Statistics on demand: what a step computes is what its readers declared they read (paper Section 5.4).

Section 5.4 prices the controller and CE as a fraction of a forward; on a small model a step that
computed every statistic for every position (entropy, margins, logit gaps, EWMAs and the history
buffers) cost a fifth of a forward whether or not the controller looked. So each reader of a forward
names what it reads:

- the controller: ``Controller.reads``, names of the optional :class:`~tspd.decoding.controllers.StepView`
  fields (:data:`VIEW`); the base class reads :data:`EVERYTHING`, so a controller that declares nothing
  sees what it always saw. Vanilla and Fast-dLLM read none: each block position's candidate and its
  probability, which every step computes;
- Confidence Extrapolation: ``ConfidenceExtrapolator.reads`` (the logit gap for its margin signal);
- the trace recorder: ``TraceRecorder.reads``, statistics of every position of the window.

A :class:`StepPlan` turns the declarations into what a step computes: the statistics of the block,
those of the whole window (only the history H and the recorder look beyond the block) and the
history buffers to keep. Each statistic is computed the same way whichever others are computed
(:func:`tspd.decoding.features.softmax_stats`), so tokens, forwards and traces do not depend on who reads.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from tspd.decoding.features import StepStats, block_rows, gumbel_argmax, softmax_stats

BLOCK = ("entropy", "margin", "logit_gap")        # block statistics beyond the candidate and its probability
HISTORY = ("ewma", "momentum", "canvas_x0", "canvas_conf", "canvas_gap")   # H, over the generated region
VIEW = ("logits", *BLOCK, "u", "quota", *HISTORY, "canvas_masked")         # StepView's optional fields
EVERYTHING = frozenset(VIEW)
ALWAYS = frozenset({"x0", "conf"})                # computed at every step: every controller reads them
# the window statistic each history buffer is made of
MADE_OF = {"ewma": "conf", "momentum": "conf", "canvas_x0": "x0", "canvas_conf": "conf", "canvas_gap": "logit_gap"}


@dataclass(frozen=True)
class StepPlan:
    """What every step of one ``generate`` call computes."""
    view: frozenset      # the optional StepView fields the controller reads (the history H keeps these)
    window: frozenset    # statistics of every position of the window (for H and the recorder); empty: none
    block: frozenset     # statistics of the block's positions
    sampled: bool        # temperature > 0: candidates are drawn over the whole window (one random stream)

    @classmethod
    def of(cls, controller_reads, ce_reads=(), recorder_reads=(), temperature: float = 0.0) -> StepPlan:
        view = frozenset(controller_reads)
        unknown = view - EVERYTHING
        if unknown:
            raise ValueError(f"a controller reads unknown view fields {sorted(unknown)}; known: {', '.join(VIEW)}")
        window = frozenset(MADE_OF[h] for h in view & set(HISTORY)) | frozenset(recorder_reads)
        block = ALWAYS | (view & set(BLOCK)) | frozenset(ce_reads)
        return cls(view, window, block, temperature > 0)

    def reads_beyond_block(self, recording: bool) -> tuple[bool, bool]:
        """Whether a step reads logits of positions (left of, right of) its block. The trace recorder keeps
        every position of the window, and a sampled step draws the whole window's candidates from one
        random stream; the history H follows every position from the block on (window statistics).
        Nothing else looks further left: those positions are fixed, and every canvas field a controller
        reads there (:data:`HISTORY`) is filtered by the mask, so the history need not follow them.
        Vanilla and Fast-dLLM, greedy and unrecorded, read the block alone."""
        left = recording or self.sampled
        return left, left or bool(self.window)

    def stats(self, logits: torch.Tensor, lo: int, hi: int, temperature: float, dtype: torch.dtype,
              generator: torch.Generator | None = None) -> tuple[StepStats | None, StepStats]:
        """(window statistics or None, block statistics) of a window's logits [B, W, V]; the block is
        rows ``[lo, hi)``. Only the block's rows are read unless the window's statistics are asked for."""
        logits = logits if logits.dtype == dtype else logits.to(dtype)
        x0 = gumbel_argmax(logits, temperature, generator) if self.sampled else None
        greedy = not self.sampled
        if not self.window:
            rows = block_rows(logits, lo, hi)
            return None, StepStats(**softmax_stats(rows, torch.log_softmax(rows, -1), block_rows(x0, lo, hi),
                                                   self.block, greedy))
        logp = torch.log_softmax(logits, -1)
        win = StepStats(**softmax_stats(logits, logp, x0, self.window, greedy))
        shared, rest = win.rows(lo, hi), self.block - self.window
        extra = softmax_stats(block_rows(logits, lo, hi), block_rows(logp, lo, hi), block_rows(x0, lo, hi), rest,
                              greedy) if rest else {}
        return win, StepStats(**{f: getattr(shared, f) for f in self.block & self.window}, **extra)


__all__ = ["StepPlan", "VIEW", "EVERYTHING", "HISTORY", "BLOCK"]
