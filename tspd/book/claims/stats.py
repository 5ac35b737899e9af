"""Intervals and verdicts: how a claim of the paper is judged from per-problem (or per-prompt) data.

A claim is a statement about a quantity measured on the same problems under two decodings (an
accuracy difference, a ratio of forwards, ...). Its 95 % interval comes from a bootstrap over
problems, resampled in pairs (Efron & Tibshirani, 1993, Ch. 13: percentile interval), so the spread
of problem difficulty cancels in the differences; statistics of decoding traces are resampled by
prompt (:func:`cluster_bootstrap`), since tokens of one prompt are not independent. The verdict is
read off the interval against the claim's bound:

* **holds**: the whole interval lies on the claimed side of the bound (or inside the claimed band);
* **does not hold**: the whole interval lies on the other side (or outside the band);
* **inconclusive**: the interval straddles the bound (more problems would be needed to tell), or
  fewer than :data:`MIN_N` problems were measured: a percentile bootstrap on a handful of problems
  gives intervals far too narrow (all-equal pairs give a zero-width one).

A :class:`Claim` joins several such findings under a rule (all must hold; any may; or "better": one
axis holds and none fails), because the paper's claims are often of the form "faster and no less
accurate".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from tspd.stats import cluster_bootstrap, joint_bootstrap, paired_bootstrap, percentile_interval  # noqa: F401 (the claims' API)

HOLDS, FAILS, OPEN = "holds", "does not hold", "inconclusive"
MIN_N = 30   # fewer problems (or prompts) than this: no verdict but "inconclusive"


def verdict(lo: float, hi: float, bound: float, above: bool = True) -> str:
    """Compare the interval ``[lo, hi]`` with ``bound``; ``above``: the claim is that the quantity exceeds it."""
    if lo > hi:
        raise ValueError(f"empty interval [{lo}, {hi}]")
    if above:
        return HOLDS if lo > bound else FAILS if hi < bound else OPEN
    return HOLDS if hi < bound else FAILS if lo > bound else OPEN


def band_verdict(lo: float, hi: float, low: float, high: float) -> str:
    """Equivalence: the claim is that the quantity lies inside ``[low, high]`` ("insensitive to ...")."""
    if lo > hi:
        raise ValueError(f"empty interval [{lo}, {hi}]")
    return HOLDS if low <= lo and hi <= high else FAILS if hi < low or lo > high else OPEN


def accuracy_gap(a, b) -> float:
    """Points of accuracy of ``a`` above ``b`` (per-problem 0/1 correctness)."""
    return 100.0 * (float(np.mean(a)) - float(np.mean(b)))


ZERO = 1e-12      # a ratio's denominator is at least this: a zero one (an AUP of 0) gives a huge value, not an error
UNBOUNDED = 1e6   # a ratio beyond this had a zero denominator: printed as ∞ (no measured ratio comes near it)


def mean_ratio(a, b) -> float:
    """``mean(b) / mean(a)``: with forwards per problem, how many times fewer ``a`` needs than ``b``."""
    return float(np.mean(b)) / max(float(np.mean(a)), ZERO)


def number(x: float) -> str:
    """A finding's value or interval end as the pages print it: two decimals, or ∞ for a ratio over a zero
    denominator (AUP against a method whose every point is 0 % accurate)."""
    return "∞" if x >= UNBOUNDED else f"{x:.2f}"


DIGITS = 6   # decimals a finding keeps (its value and interval ends)


@dataclass
class Finding:
    """One measured quantity: its value and interval on ``n`` problems, and the side it is claimed on.

    ``above`` True / False: the claim is that the quantity exceeds / stays below ``bound``; ``band``
    (low, high) instead: that it stays inside the band (an equivalence claim).
    """
    quantity: str
    value: float
    lo: float
    hi: float
    n: int
    bound: float = 0.0
    above: bool = True
    band: tuple[float, float] | None = None

    def __post_init__(self):
        # kept at the precision results/claims stores, so that a verdict read back is the verdict printed
        # (a bootstrap end of -1.0000000001 against a bound of -1 would otherwise part the two)
        self.value, self.lo, self.hi = (round(float(x), DIGITS) for x in (self.value, self.lo, self.hi))

    @property
    def verdict(self) -> str:
        if self.n < MIN_N:
            return OPEN
        if self.band is not None:
            return band_verdict(self.lo, self.hi, *self.band)
        return verdict(self.lo, self.hi, self.bound, self.above)

    @property
    def side(self) -> str:
        """The claimed side as text: ``> 1``, ``< -1``, ``in [-2, 2]``."""
        if self.band is not None:
            return f"in [{self.band[0]:g}, {self.band[1]:g}]"
        return f"{'>' if self.above else '<'} {self.bound:g}"

    @property
    def shown(self) -> str:
        """Its value and interval as every page prints them: ``0.94 [0.91, 0.96]`` (:func:`number`)."""
        return f"{number(self.value)} [{number(self.lo)}, {number(self.hi)}]"

    def text(self) -> str:
        return f"{self.quantity}: {self.shown} (claimed {self.side}; n {self.n})"

    def to_dict(self) -> dict:
        d = {"quantity": self.quantity, "value": self.value, "lo": self.lo, "hi": self.hi, "n": self.n}
        d.update({"band": list(self.band)} if self.band is not None else {"bound": self.bound, "above": self.above})
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Finding":
        band = tuple(d["band"]) if d.get("band") is not None else None
        return cls(d["quantity"], d["value"], d["lo"], d["hi"], d["n"], d.get("bound", 0.0), d.get("above", True), band)


def compare(quantity: str, a, b, stat, bound: float = 0.0, above: bool = True, band=None, **boot) -> Finding:
    """A :class:`Finding` for per-problem series ``a`` and ``b`` under ``stat`` (paired bootstrap)."""
    value, lo, hi = paired_bootstrap(a, b, stat, **boot)
    return Finding(quantity, value, lo, hi, len(a), bound, above, tuple(band) if band else None)


def compare_joint(quantity: str, series: Sequence, stat, bound: float = 0.0, above: bool = True, band=None,
                  **boot) -> Finding:
    """A :class:`Finding` for a statistic of several per-problem series resampled together."""
    value, lo, hi = joint_bootstrap(series, stat, **boot)
    return Finding(quantity, value, lo, hi, len(series[0]), bound, above, tuple(band) if band else None)


RULES = ("all", "any", "better")


@dataclass
class Claim:
    """A claim of the paper and the findings (or sub-claims) it rests on, joined by ``rule``:

    * ``all``: holds when every part holds; does not hold when any part does not;
    * ``any``: holds when some part holds; does not hold when every part does not;
    * ``better`` (one method beats another on several axes): holds when some part holds and none
      fails, does not hold when some part fails and none holds; a trade-off is inconclusive.
    """
    claim: str
    where: str                                   # the paper's figure / table
    parts: list = field(default_factory=list)    # Finding or Claim
    rule: str = "all"

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {self.rule!r}")

    @property
    def verdict(self) -> str:
        vs = [p.verdict for p in self.parts]
        if not vs:
            return OPEN
        if self.rule == "all":
            return FAILS if FAILS in vs else HOLDS if all(v == HOLDS for v in vs) else OPEN
        if self.rule == "any":
            return HOLDS if HOLDS in vs else FAILS if all(v == FAILS for v in vs) else OPEN
        held, failed = HOLDS in vs, FAILS in vs
        return HOLDS if held and not failed else FAILS if failed and not held else OPEN

    def decisive(self) -> Finding | None:
        """The one quantity that decided the verdict: depth first, the first part whose verdict is the
        claim's (a failing part of an ``all`` claim, a holding part of an ``any`` one); for a trade-off
        under ``better`` (one part holds, one fails), the first failing part; None without findings."""
        for wanted in (self.verdict, FAILS):
            for p in self.parts:
                if p.verdict == wanted:
                    return p.decisive() if isinstance(p, Claim) else p
        found = self.findings()
        return found[0] if found else None

    def findings(self) -> list[Finding]:
        """Every finding under this claim, depth first."""
        out = []
        for p in self.parts:
            out += p.findings() if isinstance(p, Claim) else [p]
        return out

    def lines(self, indent: str = "", top: bool = True) -> list[str]:
        """The claim, its verdict, and each part's evidence, one line each (what the notebooks print)."""
        rule = f" ({self.rule} of)" if len(self.parts) > 1 else ""
        out = [f"{indent}[{self.verdict}] {self.where + ': ' if top else ''}{self.claim}{rule}"]
        for p in self.parts:
            out += (p.lines(indent + "    ", top=False) if isinstance(p, Claim)
                    else [f"{indent}    [{p.verdict}] {p.text()}"])
        return out

    def to_dict(self) -> dict:
        return {"claim": self.claim, "where": self.where, "rule": self.rule,
                "parts": [p.to_dict() for p in self.parts]}

    @classmethod
    def from_dict(cls, d: dict) -> "Claim":
        parts = [cls.from_dict(p) if "parts" in p else Finding.from_dict(p) for p in d["parts"]]
        return cls(d["claim"], d["where"], parts, d.get("rule", "all"))
