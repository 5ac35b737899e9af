"""AUP, Accuracy Under Parallelism: one number for a decoder's speed-accuracy curve.

The d3LLM leaderboard's score (hao-ai-lab, d3LLM, ``AUP_leaderboard/aup_utils.py``, and its blog "Who is
the Most Parallel Parallel-Decoder?"), written here from its definition. A method contributes points
``(rho_i, y_i)``: its parallelism as TPF (tokens per forward, :func:`tspd.eval.results.tpf`) and its
accuracy in percent, one point per setting of its knob. Sorted by TPF, the points that keep at least
``y_1 - 5`` (``y_1`` the accuracy at the lowest TPF) count, and

    AUP = rho_1 y_1 + 1/2 sum_{i>1} (rho_i - rho_{i-1}) (y_i W(y_i) + y_{i-1} W(y_{i-1})),
    W(y) = min(exp(-3 (1 - y / y_max)), 1),

with ``y_max`` the best accuracy of any method on the task: the area under the accuracy-TPF curve from
TPF 0, each trapezoid weighted down where accuracy falls below the task's best. One point alone scores
``rho_1 y_1``. The paper this package reproduces reports TPS and speedups, not AUP: AUP here is the
field's yardstick applied to our own runs, and to the leaderboard's published points as theirs.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from tspd.stats import paired_bootstrap, paired_gap

ALPHA = 3.0   # the weight's penalty on accuracy below the task's best
DROP = 5.0    # points kept: accuracy at least y_1 - DROP (percentage points)

Point = tuple[float, float]   # (TPF, accuracy in %)


def weight(y: float, y_max: float, alpha: float = ALPHA) -> float:
    """W(y) = min(exp(-alpha (1 - y / y_max)), 1); 1 where no method is right at all (``y_max`` 0)."""
    if y_max <= 0:
        return 1.0
    return min(math.exp(-alpha * (1.0 - y / y_max)), 1.0)


def kept(points: Iterable[Point], drop: float = DROP) -> list[Point]:
    """The points AUP integrates: sorted by TPF (ties keep their order), accuracy >= y_1 - ``drop``."""
    ordered = sorted(((float(r), float(y)) for r, y in points), key=lambda p: p[0])
    if not ordered:
        raise ValueError("AUP needs at least one (TPF, accuracy) point")
    if any(r <= 0 for r, _ in ordered):
        raise ValueError(f"TPF must be positive, got {[r for r, _ in ordered]}")
    floor = ordered[0][1] - drop
    return [p for p in ordered if p[1] >= floor]


def aup(points: Iterable[Point], y_max: float, alpha: float = ALPHA, drop: float = DROP) -> float:
    """AUP of one method's points ``(TPF, accuracy %)`` on a task whose best accuracy is ``y_max`` (%)."""
    pts = kept(points, drop)
    total = pts[0][0] * pts[0][1]
    for (r0, y0), (r1, y1) in zip(pts, pts[1:]):
        total += 0.5 * (r1 - r0) * (y1 * weight(y1, y_max, alpha) + y0 * weight(y0, y_max, alpha))
    return total


def best_accuracy(methods: Mapping[str, Sequence[Point]]) -> float:
    """``y_max``: the best accuracy of any point of any method."""
    return max(y for pts in methods.values() for _, y in pts)


def aups(methods: Mapping[str, Sequence[Point]], y_max: float | None = None, **kw) -> dict[str, float]:
    """AUP of every method, ``y_max`` (default: the best of their points) shared by all."""
    top = best_accuracy(methods) if y_max is None else y_max
    return {name: aup(pts, top, **kw) for name, pts in methods.items()}


def forwards_at(points: Iterable[tuple[float, float]], accuracy: float) -> float:
    """The fewest forwards at which a sweep reaches ``accuracy`` (%): its points ``(forwards, accuracy %)`` joined in
    order of forwards, the first segment that rises to ``accuracy`` interpolated linearly (the cheapest point where
    it already does); ``inf`` where no point reaches it. What "at equal accuracy" reads off a threshold sweep."""
    pts = sorted((float(f), float(y)) for f, y in points)
    if not pts:
        raise ValueError("a sweep needs at least one (forwards, accuracy) point")
    if pts[0][1] >= accuracy:
        return pts[0][0]
    for (f0, y0), (f1, y1) in zip(pts, pts[1:]):
        if y0 < accuracy <= y1:
            return f0 + (accuracy - y0) / (y1 - y0) * (f1 - f0)
    return math.inf


def point(rows: Sequence[dict]) -> Point:
    """A run's point from its stored rows: (TPF, accuracy in %)."""
    from tspd.eval.results import tpf
    if not rows:
        raise ValueError("a point needs at least one row")
    rho = tpf(rows)
    if rho is None:
        raise ValueError("the rows carry no gen_tokens / nfe: TPF cannot be computed")
    return rho, 100.0 * sum(bool(r["correct"]) for r in rows) / len(rows)


def against(rows: Sequence[dict], reference: Sequence[dict], n_boot: int = 2000, seed: int = 0) -> dict:
    """One run against a reference run on the same problems (rows matched by ``id``): ``gap``, its accuracy minus
    the reference's in points with the paired 95 % interval (``gap_lo`` / ``gap_hi``), and ``ratio``, its forwards
    over the reference's (total over total) with its paired bootstrap 95 % interval (``ratio_lo`` / ``ratio_hi``).
    What "as accurate in fewer forwards" needs before it is called."""
    ref = {r["id"]: r for r in reference}
    if {r["id"] for r in rows} != set(ref) or len(ref) != len(rows):
        raise ValueError("against() compares runs of the same problems: their ids differ")
    pairs = [(r, ref[r["id"]]) for r in rows]
    gap = paired_gap([int(bool(a["correct"])) for a, _ in pairs], [int(bool(b["correct"])) for _, b in pairs])
    ratio = paired_bootstrap([a["nfe"] for a, _ in pairs], [b["nfe"] for _, b in pairs],
                             lambda a, b: float(a.sum() / b.sum()), n_boot=n_boot, seed=seed)
    return dict(zip(("gap", "gap_lo", "gap_hi", "ratio", "ratio_lo", "ratio_hi"), (*gap, *ratio)))


__all__ = ["ALPHA", "DROP", "Point", "weight", "kept", "aup", "best_accuracy", "aups", "forwards_at", "point", "against"]
