"""Intervals, one home for every number the project compares: a proportion's Wilson interval, the paired interval
of two accuracies on the same problems, and the percentile bootstraps (problems resampled in pairs, several series
jointly, or prompts resampled whole) that the claims (:mod:`tspd.book.claims`), the regime and dynamics records and
the training records use.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np


def wilson(correct: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score 95 % interval of a proportion (Wilson, 1927): honest near 0 and 1, unlike +-1.96 SE."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    lo, hi = (mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n)
    return (0.0 if correct == 0 else lo), (1.0 if correct == n else hi)   # exact where rounding would miss 0 or 1


def paired_gap(a: list[int], b: list[int], z: float = 1.96) -> tuple[float, float, float]:
    """Accuracy of ``a`` minus ``b`` on the same problems, in points, with its paired 95 % interval (the
    normal interval of a paired difference of proportions: only the problems the two disagree on count)."""
    n = len(a)
    if n == 0 or len(b) != n:
        raise ValueError(f"paired_gap needs two right/wrong lists of one length, got {len(a)} and {len(b)}")
    only_a = sum(x > y for x, y in zip(a, b))
    only_b = sum(y > x for x, y in zip(a, b))
    d = (only_a - only_b) / n
    half = z * max(only_a + only_b - (only_a - only_b) ** 2 / n, 0.0) ** 0.5 / n
    return 100 * d, 100 * max(d - half, -1.0), 100 * min(d + half, 1.0)   # a difference lies in [-100, 100]


def paired_bootstrap(a: Sequence[float], b: Sequence[float], stat: Callable[[np.ndarray, np.ndarray], float],
                     n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """``stat(a, b)`` on the problems, and its percentile interval over problems resampled in pairs."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"need two equally long, non-empty per-problem series, got {a.shape} and {b.shape}")
    return joint_bootstrap([a, b], stat, n_boot, seed, level)


def joint_bootstrap(series: Sequence, stat: Callable[..., float], n_boot: int = 2000, seed: int = 0,
                    level: float = 0.95, method: str = "linear") -> tuple[float, float, float]:
    """``stat(*series)`` and its percentile interval, every series resampled with the same problems.

    Each series holds one entry per problem along its first axis (a row of several columns per
    problem is allowed: correct, generated tokens, forwards), all in the same problem order; this is
    how statistics of several runs at once (AUP over a threshold sweep) keep their pairing. ``method``:
    numpy's percentile method (``inverted_cdf`` takes observed values only, so an ``inf`` stays ``inf``).
    """
    arrays = [np.asarray(s, dtype=float) for s in series]
    n = len(arrays[0]) if arrays else 0
    if n == 0 or any(len(x) != n for x in arrays):
        raise ValueError(f"need non-empty per-problem series of one length, got {[len(x) for x in arrays]}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    boots = np.array([stat(*(x[i] for x in arrays)) for i in idx])
    return (float(stat(*arrays)), *percentile_interval(boots, level, method))


def cluster_bootstrap(clusters: Sequence, stat: Callable[[list], float], n_boot: int = 2000, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float, float]:
    """``stat(clusters)`` and its percentile interval over clusters (e.g. prompts) resampled whole."""
    clusters = list(clusters)
    if not clusters:
        raise ValueError("need at least one cluster")
    rng = np.random.default_rng(seed)
    boots = []
    for idx in rng.integers(0, len(clusters), size=(n_boot, len(clusters))):
        value = stat([clusters[i] for i in idx])
        if np.isfinite(value):          # a resample without the data the statistic needs is skipped
            boots.append(value)
    if not boots:
        raise ValueError("the statistic is undefined on every resample")
    return (float(stat(clusters)), *percentile_interval(np.array(boots), level))


def percentile_interval(boots: np.ndarray, level: float, method: str = "linear") -> tuple[float, float]:
    """The percentile interval of bootstrap values at ``level`` (0.95: their 2.5th and 97.5th percentiles)."""
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(boots, [tail, 100 - tail], method=method)
    return float(lo), float(hi)


__all__ = ["wilson", "paired_gap", "paired_bootstrap", "joint_bootstrap", "cluster_bootstrap", "percentile_interval"]
