"""The trace of a ``generate`` call (``record_trace=True``): what the book's trace figures (paper
Figures 1-4) and the CE and cache diagnostics read.

In this package a *trace* is always this: what a decoding went through, position by position and step
by step (the paper's confidence traces). Stage 1 of controller training collects traces of the same
kind as training data (:mod:`tspd.training.traces`, ``collect-traces``) and the claims about Figures
1-4 read them (:mod:`tspd.book.claims.traces`); the running EWMA a controller reads is not one
(:class:`tspd.decoding.features.SmoothedConfidence`), nor is CE's per-position filter.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from tspd.decoding.features import StepStats


@dataclass
class Trace:
    """Per-forward, per-position records over the generated region, each [S, B, L_gen].

    Positions a forward did not compute (outside a cached window) hold NaN (-1 for ``x0``).
    ``committed`` marks the positions fixed at that step; ``block`` is the block index of each step.
    """
    conf: torch.Tensor
    entropy: torch.Tensor
    margin: torch.Tensor
    x0: torch.Tensor
    committed: torch.Tensor
    masked: torch.Tensor
    seen_conf: torch.Tensor   # the confidence the controller saw (CE's when CE is on)
    block: torch.Tensor       # [S]


class TraceRecorder:
    """Collects one record per step on the host; :meth:`trace` stacks them (None when nothing ran)."""
    reads = frozenset({"x0", "conf", "entropy", "margin"})   # of every position of the window (tspd.decoding.reads)

    def __init__(self, batch: int, gen_length: int, device):
        self.shape, self.device = (batch, gen_length), device
        self.rows: dict[str, list] = {k: [] for k in ("conf", "entropy", "margin", "x0", "committed", "masked",
                                                       "seen_conf", "block")}

    def _full(self, lo: int, hi: int, value: torch.Tensor, fill) -> torch.Tensor:
        buf = torch.full(self.shape, fill, dtype=value.dtype, device=self.device)
        buf[:, lo:hi] = value
        return buf.cpu()

    def record(self, block: int, lo: int, hi: int, st: StepStats, start: int, seen_conf: torch.Tensor,
               committed: torch.Tensor, still_masked: torch.Tensor) -> None:
        """One step: window statistics ``st`` of generated positions ``[lo, hi)``, the confidence the
        controller saw for the block at ``start``, what it committed and what is still masked after."""
        nan = float("nan")
        for name, value, fill in (("conf", st.conf.float(), nan), ("entropy", st.entropy.float(), nan),
                                  ("margin", st.margin.float(), nan), ("x0", st.x0, -1)):
            self.rows[name].append(self._full(lo, hi, value, fill))
        seen = seen_conf.float()
        self.rows["seen_conf"].append(self._full(start, start + seen.shape[1], seen, nan))
        self.rows["committed"].append(committed.cpu())
        self.rows["masked"].append(still_masked.cpu() | committed.cpu())
        self.rows["block"].append(block)

    def trace(self) -> Trace | None:
        if not self.rows["conf"]:
            return None
        return Trace(**{k: torch.stack(v) for k, v in self.rows.items() if k != "block"},
                     block=torch.tensor(self.rows["block"]))


__all__ = ["Trace", "TraceRecorder"]
