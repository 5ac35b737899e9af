"""Credit Decoding (Wang et al. 2025, arXiv 2510.06133; after dInfer's ``CreditThresholdParallelDecoder``).

A token that keeps winning at a position earns credit, and credit lifts both its logit and its
confidence, so a persistently predicted token is committed earlier. Per block, a dense credit tensor
C [B, Lb, V] (only the current block, cleared at every block start, so even LLaDA's V = 126k costs
B * 32 * V floats) evolves once per step:

    C *= decay                    (from the block's second step on; decay = 0.8)
    C[b, i, v1] += p1 ** gamma    at every masked position i, v1 its current top-1 and p1 = p(v1); gamma = 0.2
    fused = logits + alpha * log(1 + C)                                                   alpha = 0.7
    x0 = argmax fused,  conf = softmax(fused)[x0]

The commit rule is the threshold rule with a guaranteed commit: among masked positions,
thr = min(max conf - 1e-5, threshold) and every position with conf >= thr is committed. The tokens
written are the fused argmax (``Decision.tokens``).

With CE on, CE's log-odds lift of the model's own top-1 confidence, logit(conf~) - logit(raw conf), is
added to the fused confidence's log-odds where the fused and the raw argmax agree (CE forecasts the
raw top-1 token); without CE the lift is exactly 0.
"""
from __future__ import annotations

import torch

from tspd.decoding.controllers.base import Controller, Decision, StepView
from tspd.decoding.controllers.prophet import LIFT_EPS, ce_lift, log_odds
from tspd.validate import check_threshold


def credit_step(credit: torch.Tensor, logits: torch.Tensor, masked: torch.Tensor, first_step: bool,
                decay: float, gamma: float) -> torch.Tensor:
    """Decay the credit and add the concave boost p1 ** gamma on each masked position's top-1 (in place)."""
    if not first_step:
        credit.mul_(decay)
    p1, v1 = torch.softmax(logits.float(), -1).max(-1)
    credit.scatter_add_(-1, v1[..., None], (p1.pow(gamma) * masked)[..., None])
    return credit


def fuse(logits: torch.Tensor, credit: torch.Tensor, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused logits -> (x0, conf), each [B, Lb]."""
    fused = logits.float() + alpha * torch.log1p(credit)
    p = torch.softmax(fused, -1)
    conf, x0 = p.max(-1)
    return x0, conf


class CreditDecoding(Controller):
    name = "credit"
    reads = frozenset({"logits"})

    def __init__(self, threshold: float = 0.9, alpha: float = 0.7, gamma: float = 0.2, decay: float = 0.8):
        check_threshold(threshold)
        if not 0.0 <= decay <= 1.0 or alpha < 0 or gamma < 0:
            raise ValueError("need 0 <= decay <= 1, alpha >= 0 and gamma >= 0")
        self.threshold, self.alpha, self.gamma, self.decay = threshold, alpha, gamma, decay
        self.credit: torch.Tensor | None = None

    def start_block(self, block):
        self.credit = None   # credit belongs to the block it was earned in

    def decide(self, view: StepView) -> Decision:
        logits = view.logits
        if self.credit is None or self.credit.shape != logits.shape:
            self.credit = torch.zeros(logits.shape, dtype=torch.float32, device=logits.device)
        credit_step(self.credit, logits, view.masked, view.step == 0, self.decay, self.gamma)
        x0, conf = fuse(logits, self.credit, self.alpha)
        lift = torch.where(x0 == view.x0, ce_lift(view), torch.zeros_like(conf))
        score = torch.where(lift != 0, torch.sigmoid(log_odds(conf.float(), LIFT_EPS) + lift), conf)   # no host sync
        best = score.masked_fill(~view.masked, float("-inf")).amax(-1, keepdim=True)
        thr = torch.clamp(best - 1e-5, max=self.threshold)
        commit = view.masked & (score >= thr)
        return Decision(commit=commit, tokens=x0)
