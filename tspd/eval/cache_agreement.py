"""Why a KV-cached decode parts from its no-cache twin (Fast-dLLM's prefix and dual caches, paper Table 4).

A cached forward reuses the keys and values of the positions outside its window as they were at the
start of the block. Inside a block the canvas changes after every commit, so those keys grow stale
and the window's logits drift from the full forward's. Whether the drift changes an answer depends on
how close the decision it touches was.

For a stateless controller (vanilla, Fast-dLLM) the two runs see the same canvas until they commit
differently; before the first commit of a token that they do not both end with, they may at most have
committed the same tokens in another order, so a difference in confidence at that step ("the parting")
is the cache's doing. :func:`first_parting` reads that step from the two runs' traces: how far the cache
moved the confidences there (``shift``) and how close the no-cache run's token choice was (``slack``:
its top-1/top-2 probability margin). A shift at least as large as the slack is a near-tie flipped by
stale keys; a parting at the first forward of a block would point at a bug (that forward is exact by
test).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

import torch

from tspd.decoding.loop import Trace


@dataclass(frozen=True)
class Parting:
    step: int             # forward index (from 0) of the first commit of a token the two runs end up not sharing
    block: int
    step_in_block: int    # forwards since the block's first (exact) forward
    kind: str             # "flip": the runs' argmax differs there; "timing": same argmax, one run commits, one waits
    shift: float          # mean |conf_cached - conf_full| at those positions, that step
    block_shift: float    # the same over every masked position of the block
    slack: float          # the no-cache run's top-1/top-2 probability margin at those positions, that step


def final_tokens(trace: Trace, row: int = 0) -> torch.Tensor:
    """[L] the token each position ended with (the argmax at the step that committed it; -1 if never)."""
    committed = trace.committed[:, row]                               # [S, L]
    step = torch.where(committed.any(0), committed.float().argmax(0), torch.full_like(committed[0], -1, dtype=torch.long))
    out = torch.full_like(step, -1)
    done = step >= 0
    out[done] = trace.x0[step[done], row, torch.nonzero(done).squeeze(-1)]
    return out


def first_parting(ref: Trace, alt: Trace, row: int = 0) -> Parting | None:
    """Where ``alt`` (cached) starts to differ from ``ref`` (no cache), or None if they end the same.

    Runs may commit the same tokens in another order (ties among near-certain positions) and still end
    the same; those are not partings. The parting is the first step at which either run commits a token
    at a position where the final tokens differ.
    """
    differ = final_tokens(ref, row) != final_tokens(alt, row)
    if not differ.any():
        return None
    steps = min(ref.committed.shape[0], alt.committed.shape[0])
    block_starts: dict[int, int] = {}
    for s in range(steps):
        b = int(ref.block[s])
        block_starts.setdefault(b, s)
        where = differ & (ref.committed[s, row] | alt.committed[s, row])
        if not where.any():
            continue
        conf_ref, conf_alt = ref.conf[s, row], alt.conf[s, row]
        in_block = ref.masked[s, row] & ~torch.isnan(ref.seen_conf[s, row])
        flip = (ref.x0[s, row] != alt.x0[s, row])[where].any().item()
        return Parting(step=s, block=b, step_in_block=s - block_starts[b], kind="flip" if flip else "timing",
                       shift=(conf_alt - conf_ref)[where].abs().float().mean().item(),
                       block_shift=(conf_alt - conf_ref)[in_block].abs().float().mean().item(),
                       slack=ref.margin[s, row][where].float().mean().item())
    return None


def summarise(partings: list[Parting | None]) -> dict:
    """Counts and medians over the runs that parted (of ``len(partings)``); ``near_tie`` = shift >= slack."""
    parted = [p for p in partings if p is not None]
    out = {"parted": len(parted)}
    if not parted:
        return out

    def med(xs: list) -> float:
        return statistics.median(xs) if xs else math.nan

    out.update(
        flip=sum(p.kind == "flip" for p in parted),
        timing=sum(p.kind == "timing" for p in parted),
        median_step_in_block=med([p.step_in_block for p in parted]),
        median_shift=med([p.shift for p in parted]),
        median_block_shift=med([p.block_shift for p in parted]),
        median_slack=med([p.slack for p in parted]),
        near_tie=sum(p.shift >= p.slack for p in parted),
        first_step_of_block=sum(p.step_in_block == 0 for p in parted),
    )
    return out


def as_dict(p: Parting | None) -> dict | None:
    return None if p is None else asdict(p)
