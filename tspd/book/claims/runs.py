"""The paper's claims about decoding runs (Tables 1, 4-13), judged on the runs a table notebook measured.

Each function takes the notebook's runs (``{row label: RunResult}``, one task) and returns the
:class:`~tspd.book.claims.stats.Claim` of its table. Every comparison is paired over the same test
problems (the runs of one notebook share their ``limit``). Forwards (NFE) and accuracy are
deterministic under greedy decoding; wall-clock claims use each problem's share of its batch's time.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from tspd.book.claims.stats import ZERO, Claim, accuracy_gap, compare, compare_joint, mean_ratio
from tspd.eval.aup import aup

ACCURACY_KEPT = -1.0         # "no more than 1 point lower accuracy" (the paper's Table 1 reading)
INSENSITIVE_POINTS = 2.0     # Tables 10-11: accuracy within +-2 points of the default controller ...
INSENSITIVE_NFE = (0.9, 1.1)  # ... and forwards within 10 % of it


def series(result, field: str) -> np.ndarray:
    """Per-problem values of ``field`` (``correct``, ``nfe``, ``seconds``) in the split's order."""
    return np.array([float(s[field]) for s in result.samples])


def _paired(a, b) -> None:
    ids_a, ids_b = [s["id"] for s in a.samples], [s["id"] for s in b.samples]
    if ids_a != ids_b:
        raise ValueError(f"runs {a.key} and {b.key} cover different problems: compare runs of one limit")


def more_accurate(runs: Mapping, a: str, b: str, bound: float = 0.0, **boot):
    """Accuracy of ``a`` minus that of ``b`` in points, claimed above ``bound``."""
    _paired(runs[a], runs[b])
    return compare(f"accuracy {a} - {b} (points)", series(runs[a], "correct"), series(runs[b], "correct"),
                   accuracy_gap, bound, **boot)


def fewer_forwards(runs: Mapping, a: str, b: str, **boot):
    """NFE of ``b`` / NFE of ``a``, claimed above 1 (``a`` needs fewer forwards)."""
    _paired(runs[a], runs[b])
    return compare(f"NFE {b} / NFE {a}", series(runs[a], "nfe"), series(runs[b], "nfe"), mean_ratio, 1.0, **boot)


def point_series(result) -> np.ndarray:
    """Per problem: right (0/1), generated tokens other than EOS/pad/mask, the problem's own forwards
    (what a TPF-accuracy point is made of, :func:`tspd.eval.aup.point`)."""
    return np.array([[float(s["correct"]), float(s["gen_tokens"]), float(s["nfe"])] for s in result.samples])


def _point(x: np.ndarray) -> tuple[float, float]:
    return float(x[:, 1].sum() / max(x[:, 2].sum(), ZERO)), 100.0 * float(x[:, 0].mean())


def sweep_aups(sweeps: Mapping[str, Sequence[np.ndarray]]) -> dict[str, float]:
    """AUP of each method's points (:func:`point_series` arrays), ``y_max`` the best point of any method."""
    points = {m: [_point(x) for x in xs] for m, xs in sweeps.items()}
    y_max = max(y for pts in points.values() for _, y in pts)
    return {m: aup(pts, y_max) for m, pts in points.items()}


def higher_aup(sweeps: Mapping[str, Sequence], a: str, b: str, **boot):
    """AUP of ``a`` / AUP of ``b``, claimed above 1 (``a`` trades speed for accuracy better).

    ``sweeps`` maps every method of the comparison to its runs (one run: one operating point; a threshold
    sweep: several); ``y_max`` is the best accuracy of any of them, as the d3LLM leaderboard takes it.
    Problems are resampled once for all runs, so every point keeps its pairing.
    """
    names = list(sweeps)
    runs = [r for m in names for r in sweeps[m]]
    for r in runs[1:]:
        _paired(runs[0], r)
    sizes = [len(sweeps[m]) for m in names]

    def ratio(*xs):
        it = iter(xs)
        got = sweep_aups({m: [next(it) for _ in range(k)] for m, k in zip(names, sizes)})
        return got[a] / max(got[b], ZERO)

    return compare_joint(f"AUP {a} / AUP {b}", [point_series(r) for r in runs], ratio, 1.0, **boot)


def faster(runs: Mapping, a: str, b: str, **boot):
    """Wall time of ``b`` / wall time of ``a`` per problem, claimed above 1."""
    _paired(runs[a], runs[b])
    return compare(f"seconds {b} / seconds {a}", series(runs[a], "seconds"), series(runs[b], "seconds"),
                   mean_ratio, 1.0, **boot)


def main_results(runs: Mapping, ours: str = "Ours", vanilla: str = "Vanilla",
                 rivals: Sequence[tuple[str, str]] = (("F-dLLM", "Ours"), ("CD", "Ours"), ("Prophet †", "Ours †"),
                                                      ("Learn2PD †", "Ours †")), where: str = "Table 1",
                 **boot) -> Claim:
    """Table 1: TSPD + CE is faster (NFE and wall time) than each rival, at most 1 point below vanilla,
    and so trades speed for accuracy better: a higher AUP (:mod:`tspd.eval.aup`, the d3LLM leaderboard's
    score; one point per row: TPF x accuracy) than each rival. Table 2 makes the same claim on other
    backbones (``where="Table 2"``, one claim per backbone).

    Each rival is compared with our row of the same cache setting (the † rows run without cache).
    """
    parts = [more_accurate(runs, ours, vanilla, ACCURACY_KEPT, **boot)]
    pairs = [(rival, mine) for rival, mine in rivals if rival in runs and mine in runs]
    for rival, mine in pairs:
        parts.append(Claim(f"faster than {rival}", where,
                           [fewer_forwards(runs, mine, rival, **boot), faster(runs, mine, rival, **boot)]))
    if pairs:   # the field's one-number trade-off at each row's operating point (y_max: the best row)
        points = {m: [r] for m, r in runs.items()}
        parts.append(Claim("better speed-accuracy trade-off (AUP) than each rival", where,
                           [higher_aup(points, mine, rival, **boot) for rival, mine in pairs]))
    return Claim("TSPD + CE is faster than Fast-dLLM, CD, Prophet and Learn2PD at no more than 1 point lower "
                 "accuracy than vanilla: a better speed-accuracy trade-off", where, parts)


def cache_composition(runs: Mapping, no_cache: str, cached: Sequence[str], **boot) -> Claim:
    """Table 4: each KV cache speeds TSPD + CE up and keeps its accuracy (within 1 point)."""
    parts = [Claim(f"{c}: faster, accuracy kept", "Table 4",
                   [faster(runs, c, no_cache, **boot), more_accurate(runs, c, no_cache, ACCURACY_KEPT, **boot)])
             for c in cached]
    return Claim("TSPD + CE composes with prefix and dual caches (faster, accuracy kept)", "Table 4", parts)


def module_ablation(runs: Mapping, full: str, without_ce: str, without_tspd: str, **boot) -> Claim:
    """Table 5: CE adds speed on top of TSPD, and TSPD beats a confidence threshold (both with CE)."""
    return Claim("CE adds speed on top of TSPD; TSPD needs fewer forwards than a confidence threshold",
                 "Table 5", [fewer_forwards(runs, full, without_ce, **boot),
                             fewer_forwards(runs, full, without_tspd, **boot)])


def not_dominated(runs: Mapping, ours: str, rivals: Sequence[str], where: str, **boot) -> Claim:
    """Tables 6 and 8: no rival is both more accurate and needs fewer forwards than ``ours``.

    Against each rival, ``ours`` must be better on accuracy or on forwards (rule ``any``); a rival
    that is significantly better on both refutes the claim.
    """
    parts = [Claim(f"not dominated by {r}", where,
                   [more_accurate(runs, ours, r, **boot), fewer_forwards(runs, ours, r, **boot)], rule="any")
             for r in rivals]
    return Claim(f"{ours} is on the speed-accuracy front of the alternatives", where, parts)


def costs_something(runs: Mapping, full: str, ablated: Sequence[str], **boot) -> Claim:
    """Table 7: removing any feature costs accuracy or forwards (per ablation: rule ``any``)."""
    parts = [Claim(f"{a} costs accuracy or forwards", "Table 7",
                   [more_accurate(runs, full, a, **boot), fewer_forwards(runs, full, a, **boot)], rule="any")
             for a in ablated]
    return Claim("Removing any feature costs accuracy or speed", "Table 7", parts)


def beats(runs: Mapping, winner: str, losers: Sequence[str], claim: str, where: str, **boot) -> Claim:
    """``winner`` is better than each loser on accuracy or forwards and worse on neither (rule ``better``)."""
    parts = [Claim(f"{winner} vs {x}", where, [more_accurate(runs, winner, x, **boot),
                                               fewer_forwards(runs, winner, x, **boot)], rule="better")
             for x in losers]
    return Claim(claim, where, parts)


def insensitive(runs: Mapping, default: str, others: Sequence[str], what: str, where: str, **boot) -> Claim:
    """Tables 10-11: each variant's accuracy within +-2 points and forwards within 10 % of the default's."""
    parts = []
    for o in others:
        _paired(runs[o], runs[default])
        acc = compare(f"accuracy {o} - {default} (points)", series(runs[o], "correct"),
                      series(runs[default], "correct"), accuracy_gap, band=(-INSENSITIVE_POINTS, INSENSITIVE_POINTS),
                      **boot)
        nfe = compare(f"NFE {o} / NFE {default}", series(runs[default], "nfe"), series(runs[o], "nfe"), mean_ratio,
                      band=INSENSITIVE_NFE, **boot)
        parts.append(Claim(f"{o} like {default}", where, [acc, nfe]))
    return Claim(f"The controller is insensitive to {what}", where, parts)


def faster_less_accurate(runs: Mapping, fast: str, slow: str, setting: str, **boot) -> Claim:
    """Table 12: ``fast`` needs fewer forwards than ``slow`` and is less accurate."""
    return Claim(f"{setting}: {fast} faster and less accurate than {slow}", "Table 12",
                 [fewer_forwards(runs, fast, slow, **boot), more_accurate(runs, fast, slow, 0.0, above=False, **boot)])


def ce_speeds_up(runs: Mapping, controllers: Sequence[str], suffix: str = " & CE", **boot) -> Claim:
    """Table 13: adding CE to each controller lowers its forwards."""
    return Claim("CE speeds up every controller it is added to", "Table 13",
                 [fewer_forwards(runs, c + suffix, c, **boot) for c in controllers])
