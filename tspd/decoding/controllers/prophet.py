"""Prophet: early commit once the answer has converged (Li et al. 2025; public code ``pixeli99/Prophet``).

Each step Prophet decodes like vanilla LLaDA (the schedule's top-k most confident masked positions of
the block) and additionally checks whether the model has already made up its mind about the answer:
if the mean top-1/top-2 logit gap over the *answer positions* reaches a progress-dependent threshold,

    progress = (global_step + 1) / total_steps
    threshold = 7.5 if progress < 1/3, 5.0 if progress < 2/3, else 2.5,

every remaining [MASK] of the row (this block and all later ones) is filled with its current argmax
(``Decision.finish``) and decoding of that row stops.

Answer positions. Prophet's official code forces the text "The answer is" at fixed offsets and
watches the 5 positions after it. We impose no such constraint; for a general prompt the answer's
location is unknown, so the answer positions are the still-masked positions of the remaining
generated region (``answer="remaining"``, default): Prophet then stops exactly when everything that
is left to decode is decided by a wide margin, which is the condition its fixed window stands for.
``answer="block"`` watches only the current block's masked positions (cheaper, more aggressive).
Gaps outside the current window are the latest ones computed (stale under the dual cache).

With CE on, the block's gaps are raised by CE's log-odds lift, logit(conf~) - logit(raw conf), the
2-way approximation of how much CE expects the gap to grow; without CE this lift is exactly 0.
"""
from __future__ import annotations

import torch

from tspd.decoding.controllers.base import Controller, Decision, StepView, top_k_mask
from tspd.decoding.extrapolate import log_odds

ANSWER_MODES = ("remaining", "block")


LIFT_EPS = 1e-6   # confidences clamped to [eps, 1 - eps] before their log-odds (CE's lift, Credit's score)


def ce_lift(view: StepView) -> torch.Tensor:
    """CE's forecast gain in log-odds per block position ([B, Lb]; 0 where CE changed nothing)."""
    if view.conf is view.raw_conf:
        return torch.zeros_like(view.raw_conf, dtype=torch.float32)
    return log_odds(view.conf.float(), LIFT_EPS) - log_odds(view.raw_conf.float(), LIFT_EPS)


class Prophet(Controller):
    name = "prophet"

    def __init__(self, thresholds: tuple[float, float, float] = (7.5, 5.0, 2.5),
                 boundaries: tuple[float, float] = (1 / 3, 2 / 3), answer: str = "remaining"):
        if answer not in ANSWER_MODES:
            raise ValueError(f"answer must be one of {ANSWER_MODES}, got {answer!r}")
        if len(thresholds) != 3 or len(boundaries) != 2 or not boundaries[0] <= boundaries[1]:
            raise ValueError("thresholds needs 3 values (early, mid, late) and boundaries 2 increasing values")
        self.thresholds, self.boundaries, self.answer = tuple(thresholds), tuple(boundaries), answer
        # finishing writes every remaining mask's latest candidate (canvas_x0); "remaining" watches every gap
        self.reads = frozenset({"quota", "logit_gap", "canvas_x0"}
                               | ({"canvas_gap", "canvas_masked"} if answer == "remaining" else set()))
        self.fired: torch.Tensor | None = None   # [B] bool: rows finished early (diagnostics)

    def reset(self, batch, gen_length, block_length, device):
        self.fired = torch.zeros(batch, dtype=torch.bool, device=device)

    def threshold(self, view: StepView) -> float:
        progress = (view.global_step + 1) / max(view.total_steps, 1)
        early, mid, late = self.thresholds
        return early if progress < self.boundaries[0] else mid if progress < self.boundaries[1] else late

    def answer_gap(self, view: StepView) -> torch.Tensor:
        """Mean logit gap over the answer positions, per row ([B]; -inf for rows with none left)."""
        block_gap = view.logit_gap.float() + ce_lift(view)
        if self.answer == "remaining" and getattr(view, "canvas_gap", None) is not None:
            gap = view.canvas_gap.float().clone()
            gap[:, view.block_start:view.block_start + block_gap.shape[1]] = block_gap
            where = view.canvas_masked
        else:
            gap, where = block_gap, view.masked
        n = where.sum(-1)
        mean = (gap * where).sum(-1) / n.clamp_min(1)
        return torch.where(n > 0, mean, torch.full_like(mean, float("-inf")))

    def decide(self, view: StepView) -> Decision:
        commit = top_k_mask(view.conf, view.masked, view.quota, view.uniform_quota)
        finish = view.masked.any(-1) & (self.answer_gap(view) >= self.threshold(view))
        self.fired = finish if self.fired is None or self.fired.shape != finish.shape else self.fired | finish
        return Decision(commit=commit, finish=finish)
