"""Does the paper hold here? Intervals and verdicts for its claims, from stored per-problem results.

Every claim is a statement about a quantity measured on the same problems under two decodings (an
accuracy difference, a ratio of forwards, ...). Its 95 % interval comes from a paired bootstrap over
problems (Efron & Tibshirani, 1993, Ch. 13: percentile interval), so the spread of problem difficulty
cancels in the differences. The verdict is read off the interval against the claim's bound:

* **holds**: the whole interval lies on the claimed side of the bound;
* **does not hold**: the whole interval lies on the other side;
* **inconclusive**: the interval straddles the bound (more problems would be needed to tell).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

HOLDS, FAILS, OPEN = "holds", "does not hold", "inconclusive"


def verdict(lo: float, hi: float, bound: float, above: bool = True) -> str:
    """Compare the interval ``[lo, hi]`` with ``bound``; ``above``: the claim is that the quantity exceeds it."""
    if lo > hi:
        raise ValueError(f"empty interval [{lo}, {hi}]")
    if above:
        return HOLDS if lo > bound else FAILS if hi < bound else OPEN
    return HOLDS if hi < bound else FAILS if lo > bound else OPEN


def paired_bootstrap(a: Sequence[float], b: Sequence[float], stat: Callable[[np.ndarray, np.ndarray], float],
                     n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """``stat(a, b)`` on the problems, and its percentile interval over problems resampled in pairs."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"need two equally long, non-empty per-problem series, got {a.shape} and {b.shape}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n_boot, len(a)))
    boots = np.array([stat(a[i], b[i]) for i in idx])
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(boots, [tail, 100 - tail])
    return float(stat(a, b)), float(lo), float(hi)


def accuracy_gap(a, b) -> float:
    """Points of accuracy of ``a`` above ``b`` (per-problem 0/1 correctness)."""
    return 100.0 * (float(np.mean(a)) - float(np.mean(b)))


def mean_ratio(a, b) -> float:
    """``mean(b) / mean(a)``: with forwards per problem, how many times fewer ``a`` needs than ``b``."""
    return float(np.mean(b)) / max(float(np.mean(a)), 1e-12)


@dataclass
class Finding:
    """One measured claim: the quantity, its interval on ``n`` problems and the verdict."""
    claim: str
    where: str            # the paper's table / figure / section
    quantity: str
    value: float
    lo: float
    hi: float
    n: int
    bound: float
    above: bool = True

    @property
    def verdict(self) -> str:
        return verdict(self.lo, self.hi, self.bound, self.above)

    def row(self) -> dict:
        return {"claim": self.claim, "where": self.where, "quantity": self.quantity,
                "measured": f"{self.value:.2f} [{self.lo:.2f}, {self.hi:.2f}]", "n": self.n,
                "bound": f"{'>' if self.above else '<'} {self.bound:g}", "verdict": self.verdict}


def compare(claim: str, where: str, quantity: str, a, b, stat, bound: float, above: bool = True,
            **boot) -> Finding:
    """A :class:`Finding` for per-problem series ``a`` and ``b`` under ``stat`` (paired bootstrap)."""
    value, lo, hi = paired_bootstrap(a, b, stat, **boot)
    return Finding(claim, where, quantity, value, lo, hi, len(a), bound, above)


__all__ = ["HOLDS", "FAILS", "OPEN", "verdict", "paired_bootstrap", "accuracy_gap", "mean_ratio", "Finding",
           "compare"]
