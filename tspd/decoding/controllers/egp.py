"""Extremely Greedy Parallel decoding (EGP): Learn2PD's oracle controller (Bao et al. 2025, arXiv 2509.25188).

EGP knows the answer: ``reference`` [B, gen_length] holds the tokens vanilla decoding produced. At
each step it commits every masked block position whose current argmax already equals the reference
token. If a row's argmax over the whole block is unchanged from its previous step (the model is stuck
and will not move by itself), the reference is copied into the rest of that row's block. Every token
written is a reference token, so EGP reproduces the vanilla output exactly, in far fewer forwards;
its traces are the training data of Learn2PD and TSPD (paper Section 4.1, Appendix A.4).

``max_idle`` bounds the steps without a commit (sampling could keep the argmax moving forever).
"""
from __future__ import annotations

import torch

from tspd.decoding.controllers.base import Controller, Decision, StepView


class EGP(Controller):
    name = "egp"
    reads = frozenset()      # the candidates only
    force_progress = False   # a step may legitimately commit nothing: the oracle waits for a match

    def __init__(self, reference: torch.Tensor, max_idle: int = 8):
        if reference is None:
            raise ValueError("EGP needs reference token ids [B, gen_length] (the vanilla output)")
        self.reference = torch.as_tensor(reference).long()
        self.max_idle = max_idle

    def reset(self, batch, gen_length, block_length, device):
        if tuple(self.reference.shape) != (batch, gen_length):
            raise ValueError(f"reference has shape {tuple(self.reference.shape)}, expected {(batch, gen_length)}")
        self.reference = self.reference.to(device)
        self.prev_x0: torch.Tensor | None = None
        self.idle = torch.zeros(batch, dtype=torch.long, device=device)

    def start_block(self, block):
        self.prev_x0 = None
        self.idle.zero_()

    def decide(self, view: StepView) -> Decision:
        ref = self.reference[:, view.block_start:view.block_start + view.masked.shape[1]]
        commit = view.masked & (view.x0 == ref)
        stuck = (self.idle >= self.max_idle)
        if self.prev_x0 is not None:
            stuck |= (view.x0 == self.prev_x0).all(-1)
        commit |= view.masked & stuck[:, None]
        self.prev_x0 = view.x0.clone()
        self.idle = torch.where(commit.any(-1), torch.zeros_like(self.idle), self.idle + 1)
        return Decision(commit=commit, tokens=ref)
