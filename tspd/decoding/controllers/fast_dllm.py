"""Fast-dLLM's confidence-aware parallel decoding (Wu et al. 2025; ``NVlabs/Fast-dLLM``).

Threshold rule: the most confident masked token is always committed, every other one whose confidence
is >= ``threshold`` too. Factor rule (``factor`` set): with masked confidences sorted c(1) >= c(2) >= ...,
commit the top r - 1 where r is the first rank n >= 2 with c(n) < 1 - factor / (n + 1); if none fails,
or only the last one does (a quirk of the reference, kept for parity), commit all.
"""
from __future__ import annotations

import torch

from tspd.decoding.controllers.base import Controller, Decision, StepView, rank_in_row, valid_scores
from tspd.validate import check_threshold


class FastDLLM(Controller):
    name = "fast-dllm"
    reads = frozenset()      # the candidates' confidences only
    # both rules commit the most confident masked position at every step, which is all the loop's
    # guarantee of progress would add: the loop need not check
    force_progress = False

    def __init__(self, threshold: float = 0.9, factor: float | None = None):
        check_threshold(threshold)
        if factor is not None and factor <= 0:
            raise ValueError(f"factor must be positive, got {factor}")
        self.threshold, self.factor = threshold, factor

    def decide(self, view: StepView) -> Decision:
        if self.factor is None:   # every masked position at the threshold, and the most confident one
            best = valid_scores(view.conf, view.masked)   # -inf: never at the threshold
            chosen = (best >= self.threshold).scatter_(-1, best.argmax(-1, keepdim=True), True)   # + rank 0
            return Decision(commit=view.masked & chosen, within_masked=True)
        rank = rank_in_row(view.conf, view.masked)
        n_masked = view.masked.sum(-1, keepdim=True)
        sorted_conf = view.conf.masked_fill(~view.masked, float("-inf")).sort(-1, descending=True).values
        n = torch.arange(1, sorted_conf.shape[-1] + 1, device=sorted_conf.device)
        passes = (sorted_conf >= 1 - self.factor / (n + 1)) | (n == 1)
        passes &= n <= n_masked
        count = passes.long().cumprod(-1).sum(-1, keepdim=True)
        count = torch.where(count == n_masked - 1, n_masked, count)   # reference quirk, see docstring
        return Decision(commit=view.masked & (rank < count), within_masked=True)
