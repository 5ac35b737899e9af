"""Does the paper hold here? Intervals and verdicts for its claims, from stored per-problem results.

Every claim is a statement about a quantity measured on the same problems under two decodings (an
accuracy difference, a ratio of forwards, ...). Its 95 % interval comes from a paired bootstrap over
problems (Efron & Tibshirani, 1993, Ch. 13: percentile interval), so the spread of problem difficulty
cancels in the differences. The verdict is read off the interval against the claim's bound:

* **holds**: the whole interval lies on the claimed side of the bound;
* **does not hold**: the whole interval lies on the other side;
* **inconclusive**: the interval straddles the bound (more problems would be needed to tell), or
  fewer than :data:`MIN_N` problems were measured: a percentile bootstrap on a handful of problems
  gives intervals far too narrow (all-equal pairs give a zero-width one).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from tspd.eval.results import wilson  # noqa: F401 (re-exported: accuracy intervals of the claims)

HOLDS, FAILS, OPEN = "holds", "does not hold", "inconclusive"
MIN_N = 30   # fewer problems than this: no verdict but "inconclusive"


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
        return OPEN if self.n < MIN_N else verdict(self.lo, self.hi, self.bound, self.above)

    def row(self) -> dict:
        return {"claim": self.claim, "where": self.where, "quantity": self.quantity,
                "measured": f"{self.value:.2f} [{self.lo:.2f}, {self.hi:.2f}]", "n": self.n,
                "bound": f"{'>' if self.above else '<'} {self.bound:g}", "verdict": self.verdict}


def compare(claim: str, where: str, quantity: str, a, b, stat, bound: float, above: bool = True,
            **boot) -> Finding:
    """A :class:`Finding` for per-problem series ``a`` and ``b`` under ``stat`` (paired bootstrap)."""
    value, lo, hi = paired_bootstrap(a, b, stat, **boot)
    return Finding(claim, where, quantity, value, lo, hi, len(a), bound, above)


__all__ = ["HOLDS", "FAILS", "OPEN", "MIN_N", "wilson", "verdict", "paired_bootstrap", "accuracy_gap", "mean_ratio", "Finding",
           "compare"]


# ------------------------------------------------------------------------------------------------
# The paper's claims that the stored runs of the table notebooks can test (same configurations)
# ------------------------------------------------------------------------------------------------
NOT_YET = [   # claims of the paper this page does not test yet, with the notebook that shows their data
    ("Fig. 1", "Within a confidence bin, unstable traces flip more often than stable ones.", "figure01_flip_rate"),
    ("Fig. 2", "Tokens further right stabilise later.", "figure02_position_stabilization"),
    ("Fig. 3/4", "A share of tokens is extrapolable: CE would commit them earlier than a threshold.",
     "figure04_extrapolable_steps"),
    ("Table 6/8", "The 2-layer LSTM at the default size is on the speed-accuracy front of the alternatives.",
     "table06_controller_architecture"),
    ("Table 7", "Removing any feature costs accuracy or speed.", "table07_feature_ablation"),
    ("Table 9", "EGP traces beat standard-policy traces.", "table09_collection_policy"),
    ("Table 10/11", "The controller is insensitive to data scale and difficulty mix.", "table10_data_scale"),
    ("Table 12", "Smaller tau or larger H is faster and less accurate.", "table12_ce_hyperparameters"),
]


def _series(result, field: str) -> np.ndarray:
    return np.array([float(s[field]) for s in result.samples])


def measured_claims(base, results_dir=None, **boot) -> list[Finding]:
    """Tables 1, 4, 5 and 13's claims on ``base``'s task and problems (runs read back or computed)."""
    from tspd.book import notebook as book
    runs = {
        "Vanilla": book.method_config(base, "Vanilla"),
        "F-dLLM": book.method_config(base, "F-dLLM"),
        "F-dLLM †": book.method_config(base, "F-dLLM", cache="none"),
        "CD": book.method_config(base, "CD"),
        "Prophet †": book.method_config(base, "Prophet †"),
        "Learn2PD †": book.method_config(base, "Learn2PD †"),
        "Ours †": book.method_config(base, "Ours †"),
        "Ours": book.method_config(base, "Ours"),
        "TSPD †": book.method_config(base, "Ours †", ce=False),
    }
    for name in ("F-dLLM", "CD", "Learn2PD †"):
        runs[name + " & CE"] = book.method_config(base, name, ce=True)
    r = book.measure(runs, results_dir=results_dir, progress=False)
    correct, nfe, secs = ({k: _series(v, f) for k, v in r.items()} for f in ("correct", "nfe", "seconds"))
    out = [compare("TSPD + CE (Ours, dual cache) loses at most 1 point of accuracy against vanilla",
                   "Table 1", "accuracy gap to vanilla (points)", correct["Ours"], correct["Vanilla"],
                   accuracy_gap, bound=-1.0, **boot)]
    for other, ours in (("F-dLLM", "Ours"), ("CD", "Ours"), ("Prophet †", "Ours †"), ("Learn2PD †", "Ours †")):
        out.append(compare(f"TSPD + CE needs fewer forwards than {other}", "Table 1",
                           f"NFE of {other} / NFE of {ours}", nfe[ours], nfe[other], mean_ratio, bound=1.0, **boot))
    out.append(compare("TSPD + CE is faster in wall-clock time than Fast-dLLM (both with dual cache)", "Table 1",
                       "seconds of F-dLLM / seconds of Ours", secs["Ours"], secs["F-dLLM"], mean_ratio, 1.0, **boot))
    out.append(compare("The dual cache speeds TSPD + CE up", "Table 4", "seconds without / with cache",
                       secs["Ours"], secs["Ours †"], mean_ratio, 1.0, **boot))
    out.append(compare("... and keeps its accuracy (within 1 point)", "Table 4", "accuracy gap with / without cache (points)",
                       correct["Ours"], correct["Ours †"], accuracy_gap, -1.0, **boot))
    out.append(compare("CE adds speed on top of TSPD", "Table 5", "NFE of TSPD / NFE of TSPD + CE",
                       nfe["Ours †"], nfe["TSPD †"], mean_ratio, 1.0, **boot))
    out.append(compare("TSPD alone needs fewer forwards than a confidence threshold (Fast-dLLM 0.9)", "Table 5",
                       "NFE of F-dLLM / NFE of TSPD (no cache)", nfe["TSPD †"], nfe["F-dLLM †"], mean_ratio, 1.0, **boot))
    for name in ("F-dLLM", "CD", "Learn2PD †"):
        out.append(compare(f"CE speeds up {name}", "Table 13", f"NFE of {name} / with CE",
                           nfe[name + " & CE"], nfe[name], mean_ratio, 1.0, **boot))
    return out


__all__ += ["NOT_YET", "measured_claims"]
