"""Verdicts read off intervals (tspd.book.claims): above, below, straddling; and the paired bootstrap."""
from __future__ import annotations

import numpy as np
import pytest

from tspd.book import claims


@pytest.mark.parametrize("lo,hi,bound,above,expected", [
    (1.2, 2.0, 1.0, True, claims.HOLDS),       # clearly above a claimed lower bound
    (0.2, 0.8, 1.0, True, claims.FAILS),       # clearly below it
    (0.8, 1.3, 1.0, True, claims.OPEN),        # straddles it
    (-3.0, -1.5, -1.0, False, claims.HOLDS),   # claimed below: wholly below
    (-0.5, 0.5, -1.0, False, claims.FAILS),
    (-1.5, -0.5, -1.0, False, claims.OPEN),
])
def test_verdict_from_synthetic_intervals(lo, hi, bound, above, expected):
    assert claims.verdict(lo, hi, bound, above) == expected


def test_verdict_rejects_an_empty_interval():
    with pytest.raises(ValueError):
        claims.verdict(2.0, 1.0, 0.0)


def test_paired_bootstrap_separates_a_real_gap_from_noise():
    rng = np.random.default_rng(1)
    b = rng.random(400) < 0.6
    better = b | (rng.random(400) < 0.5)            # a fixes half of b's failures: about +20 points
    value, lo, hi = claims.paired_bootstrap(better, b, claims.accuracy_gap)
    assert 15 < value < 25 and 10 < lo < value < hi
    assert claims.verdict(lo, hi, 0.0) == claims.HOLDS
    same = b.copy()
    right, wrong = np.flatnonzero(b)[:3], np.flatnonzero(~b)[:3]
    same[right], same[wrong] = False, True            # 3 flips each way on 400: no real difference
    value, lo, hi = claims.paired_bootstrap(same, b, claims.accuracy_gap)
    assert value == 0.0 and claims.verdict(lo, hi, 0.0) == claims.OPEN


def test_forward_ratio_and_finding_row():
    nfe_fast, nfe_slow = np.full(50, 16.0), np.full(50, 64.0)
    f = claims.compare("fewer forwards", "Table 1", "NFE ratio", nfe_fast, nfe_slow, claims.mean_ratio, bound=1.0)
    assert f.value == pytest.approx(4.0) and f.lo == pytest.approx(4.0) and f.verdict == claims.HOLDS
    assert f.row()["verdict"] == "holds" and f.row()["n"] == 50
    with pytest.raises(ValueError):
        claims.paired_bootstrap([1, 2], [1, 2, 3], claims.mean_ratio)


def test_too_few_problems_give_no_verdict():
    same = np.zeros(claims.MIN_N - 1)
    f = claims.compare("no loss", "Table 1", "gap", same, same, claims.accuracy_gap, bound=-1.0)
    assert (f.lo, f.hi) == (0.0, 0.0) and f.verdict == claims.OPEN      # a zero-width interval proves nothing
    enough = np.zeros(claims.MIN_N)
    assert claims.compare("no loss", "Table 1", "gap", enough, enough, claims.accuracy_gap, bound=-1.0).verdict == \
        claims.HOLDS
