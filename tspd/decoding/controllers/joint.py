"""Joint-confidence bound: commit a set of tokens only while they are likely right together (beyond the paper).

Fast-dLLM's threshold judges each token alone: two tokens at 0.95 are both committed, though on a coupled answer
(a line's hours that must add up, a day's chores that must differ) each may be right only if the other is not.
EB-Sampler (Ben-Hamu et al. 2025, arXiv 2505.24857) bounds the error of the set a step commits instead (by a sum of
entropies). This rule does the same with the confidences the decoder already has (CE's forecast when CE is on):
with a block's masked confidences sorted c(1) >= c(2) >= ..., it commits the longest prefix whose product

    c(1) * c(2) * ... * c(n) >= bound

is the probability that all n are right were they independent (at least the most confident token, as every rule
here). Sure tokens (c near 1) go together in any number; two tokens at 0.6 never do at a bound of 0.4, one does.
The bound is the one knob: lower commits more a step.
"""
from __future__ import annotations

import math

import torch

from tspd.decoding.controllers.base import Controller, Decision, StepView, valid_scores
from tspd.validate import check_threshold


def joint_prefix(conf: torch.Tensor, valid: torch.Tensor, bound: float) -> torch.Tensor:
    """[B, L] bool: each row's longest run of its most confident ``valid`` entries whose confidences multiply to
    >= ``bound``, and always its most confident valid entry (none in a row without valid entries)."""
    ranked, order = valid_scores(conf.float(), valid).sort(-1, descending=True)
    present = ranked > float("-inf")
    log_joint = torch.where(present, ranked.clamp_min(1e-30).log(), torch.zeros_like(ranked)).cumsum(-1)
    keep = present & (log_joint >= math.log(bound))
    keep[:, 0] = present[:, 0]                               # the most confident always (progress)
    keep = keep.long().cumprod(-1).bool()                    # a prefix: the first failure ends it
    return torch.zeros_like(valid).scatter_(-1, order, keep)


class JointBound(Controller):
    name = "joint"
    reads = frozenset()      # the candidates' confidences only
    force_progress = False   # the rule commits the most confident masked token itself

    def __init__(self, bound: float = 0.4):
        check_threshold(bound, "bound")
        self.bound = bound

    def decide(self, view: StepView) -> Decision:
        return Decision(commit=joint_prefix(view.conf, view.masked, self.bound), within_masked=True)
