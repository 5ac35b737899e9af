"""The controller interface: what the generation loop shows a decoding controller, and what it answers.

Every controller of the paper (vanilla LLaDA, Fast-dLLM, Prophet, Learn2PD, Credit Decoding, EGP, TSPD) is
a :class:`Controller`. Once per forward the loop builds a :class:`StepView` of the current block and the
controller returns a :class:`Decision`; the loop then enforces the invariants (only still-masked
positions of the current block are written, committed tokens never change, a stalled row commits its
most confident token).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from tspd.decoding.reads import EVERYTHING


@dataclass
class StepView:
    """One step of one block. Per-token tensors are [B, Lb] over the current block.

    The fields typed ``| None`` are filled only for a controller that reads them (``Controller.reads``,
    :mod:`tspd.decoding.reads`); the rest are always there.
    """
    step: int                   # step index inside the block, from 0
    global_step: int            # steps taken so far in this generation, from 0
    total_steps: int            # the configured step budget for the whole generation (LLaDA's `steps`)
    block: int                  # block index
    num_blocks: int
    block_start: int            # offset of the block inside the generated region
    steps_per_block: int
    logits: torch.Tensor | None     # [B, Lb, V] block logits in the confidence dtype
    x0: torch.Tensor                # candidate tokens
    conf: torch.Tensor              # the confidence the controller should use (CE's forecast when CE is on)
    raw_conf: torch.Tensor          # the model's own p(x0)
    entropy: torch.Tensor | None
    margin: torch.Tensor | None     # p1 - p2
    logit_gap: torch.Tensor | None  # l1 - l2
    ewma: torch.Tensor | None       # EWMA confidence (alpha 0.25)
    momentum: torch.Tensor | None   # its one-step difference
    phi: torch.Tensor               # [Lb] relative position in the block
    u: torch.Tensor | None          # CE forecast uncertainty (0 without CE)
    masked: torch.Tensor            # bool: still [MASK] before this step's commit
    quota: torch.Tensor | None      # [B] LLaDA schedule: tokens to commit at this step
    canvas_x0: torch.Tensor | None      # [B, L_gen] latest candidate at every generated position
    canvas_conf: torch.Tensor | None    # [B, L_gen] its confidence
    canvas_masked: torch.Tensor | None  # [B, L_gen] bool
    eos_id: int
    mask_id: int
    canvas_gap: torch.Tensor | None = None  # [B, L_gen] latest logit gap l1 - l2 (Prophet's answer window)
    uniform_quota: int | None = None        # the quota when every row's is the same (known on the host), else None


@dataclass
class Decision:
    commit: torch.Tensor                   # [B, Lb] bool: fix these positions now
    tokens: torch.Tensor | None = None     # [B, Lb] tokens to write (default: view.x0)
    finish: torch.Tensor | None = None     # [B] bool: fill every remaining mask with canvas_x0 (Prophet)
    eos_at: torch.Tensor | None = None     # [B] long generated-region index of a predicted EOS, -1 for none:
                                           # every later position becomes EOS (Learn2PD's End-of-Text Prediction)
    within_masked: bool = False            # the controller's promise that ``commit`` is only masked positions
                                           # (the loop then need not intersect it with them)


class Controller:
    """Base class. Subclasses set ``name`` and implement :meth:`decide`."""
    name = "base"
    reads = EVERYTHING       # the optional StepView fields it reads (tspd.decoding.reads); the step computes those
    fixed_schedule = False   # True: exactly steps_per_block forwards per block, as LLaDA's generate
    force_progress = True    # a row with masks left commits at least its most confident token

    def bind(self, model) -> None:
        """Called with the model before decoding (a learned controller finds its weights beside it)."""

    def reset(self, batch: int, gen_length: int, block_length: int, device: torch.device) -> None:
        """Called once per ``generate`` call, before the first forward."""

    def start_block(self, block: int) -> None:
        """Called when a new block starts."""

    def decide(self, view: StepView) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError


def rank_in_row(score: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Rank (0 = best) of each valid entry of ``score`` [B, L] in its row; invalid entries rank last."""
    s = score.masked_fill(~valid, float("-inf"))
    order = s.argsort(dim=-1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(-1, order, torch.arange(s.shape[-1], device=s.device).expand_as(order))
    return rank


@functools.lru_cache(maxsize=16)
def slots(width: int, device: torch.device) -> torch.Tensor:
    """0..width-1 (a block's positions), made once per width and device; never written to."""
    return torch.arange(width, device=device)


@functools.lru_cache(maxsize=16)
def _minus_inf(device: torch.device) -> torch.Tensor:
    return torch.tensor(float("-inf"), device=device)


def valid_scores(score: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``score`` where ``valid``, -inf elsewhere (in ``score``'s dtype): one operation, with a -inf made
    once per device rather than a scalar tensor made by every call."""
    return torch.where(valid, score, _minus_inf(valid.device))


def top_one(score: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The entry :func:`rank_in_row` ranks 0, as a bool mask [B, L]: each row's highest-scoring valid entry,
    the first on ties (none in a row without valid entries). Four operations instead of a sort."""
    best = valid_scores(score, valid).argmax(-1, keepdim=True)
    return (slots(valid.shape[-1], valid.device) == best) & valid


def top_k_mask(score: torch.Tensor, valid: torch.Tensor, k: torch.Tensor, uniform: int | None = None) -> torch.Tensor:
    """The ``k[b]`` highest-scoring valid entries of each row, as a bool mask [B, L].

    ``uniform``: every row's k, where it is known on the host (a step's ``uniform_quota``): 1 takes the
    sort-free :func:`top_one`, 0 nothing; the same entries either way.
    """
    if uniform == 1:
        return top_one(score, valid)
    if uniform == 0:
        return torch.zeros_like(valid)
    return valid & (rank_in_row(score, valid) < k[:, None])
