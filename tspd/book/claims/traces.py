"""The paper's claims about decoding traces (Figures 1-4), with the per-token measurements behind them.

:func:`flip_states` and :func:`stabilisation` turn a trace set (:func:`tspd.training.variants.traces`)
into per-token tensors that the Figure 1 and 2 notebooks plot and that the claims here test; every
interval resamples prompts (:func:`~tspd.book.claims.stats.cluster_bootstrap`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tspd.book.claims.stats import Claim, Finding, cluster_bootstrap, percentile_interval
from tspd.measures.dynamics import DynamicsConfig, fig1_counts, flip_gap_of


@dataclass
class FlipStates:
    """Figure 1's token states: a masked token at a step with at least ``window`` steps of history."""
    conf: torch.Tensor       # [N] confidence of the step's top-1 token
    spread: torch.Tensor     # [N] std of that confidence over the last ``window`` steps
    flip: torch.Tensor       # [N] 1.0 if the step's argmax is not the token finally decoded
    prompt: torch.Tensor     # [N] prompt index of the state


def _cat(parts: list[torch.Tensor], dtype) -> torch.Tensor:
    """The parts concatenated in ``dtype`` (an empty tensor of it when there are none)."""
    return torch.cat(parts).to(dtype) if parts else torch.zeros(0, dtype=dtype)


def flip_states(data: dict, window: int) -> FlipStates:
    """Per masked (token, step) with ``window`` steps of history: confidence, its spread, and a flip."""
    channel = data["channels"].index("conf")
    off = data["offsets"].tolist()
    conf, spread, flip, prompt = [], [], [], []
    for m, (a, b) in enumerate(zip(off, off[1:])):
        c, y, mk = data["features"][a:b, :, channel], data["labels"][a:b], data["masked"][a:b]
        if b - a < window:
            continue
        recent = c.unfold(0, window, 1)                 # [S - k + 1, Lb, k]: the last k steps of each step
        keep = mk[window - 1:]
        conf.append(c[window - 1:][keep])
        spread.append(recent.std(-1)[keep])
        flip.append(~y[window - 1:][keep])
        prompt.append(torch.full((int(keep.sum()),), int(data["prompt_index"][m])))
    return FlipStates(_cat(conf, torch.float32), _cat(spread, torch.float32), _cat(flip, torch.float32),
                      _cat(prompt, torch.long))


def flip_gap(states: FlipStates, unstable_std: float, bins: int, **boot) -> Finding:
    """Figure 1: P_flip(unstable) - P_flip(stable) within confidence bins, averaged over the bins that
    hold both kinds of state (weighted by their states), in points; prompts resampled
    (:func:`tspd.measures.dynamics.flip_gap_of`, the dynamics record's measure)."""
    cfg = DynamicsConfig(moved_std=unstable_std, bins=bins)
    per_prompt = [fig1_counts(states.conf[sel], states.spread[sel], states.flip[sel].bool(), cfg)
                  for sel in (states.prompt == p for p in states.prompt.unique().tolist())]
    value, lo, hi = cluster_bootstrap(per_prompt, flip_gap_of, **boot)
    return Finding("P_flip unstable - stable within a confidence bin (points)", value, lo, hi, len(per_prompt), 0.0)


@dataclass
class Stabilisation:
    """Figure 2's tokens: when each decoded position stopped changing, and when vanilla committed it."""
    pos_block: torch.Tensor      # [N] position inside its block
    pos_answer: torch.Tensor     # [N] position in the generated answer
    stab: torch.Tensor           # [N] step (inside the block) after which the argmax is the final token
    commit: torch.Tensor         # [N] step (inside the block) at which vanilla committed it
    stab_global: torch.Tensor    # [N] the same steps counted from the start of decoding
    commit_global: torch.Tensor
    prompt: torch.Tensor         # [N] prompt index


def stabilisation(data: dict) -> Stabilisation:
    """Per decoded token of a trace set: stabilisation and commit steps, inside the block and overall."""
    off = data["offsets"].tolist()
    Lb = data["labels"].shape[1]
    start_of, per_prompt = {}, {}        # steps before each sequence's block, per prompt
    for m, (p, b) in enumerate(zip(data["prompt_index"].tolist(), data["block"].tolist())):
        per_prompt.setdefault(p, []).append((b, m))
    for seqs in per_prompt.values():
        done = 0
        for _, m in sorted(seqs):
            start_of[m] = done
            done += off[m + 1] - off[m]
    cols = {k: [] for k in ("pos_block", "pos_answer", "stab", "commit", "stab_global", "commit_global", "prompt")}
    for m, (a, e) in enumerate(zip(off, off[1:])):
        y, mk = data["labels"][a:e], data["masked"][a:e]
        t = torch.arange(e - a)[:, None].expand_as(y)
        ever = mk.any(0)                                        # positions this sequence decoded
        last_wrong = torch.where(mk & ~y, t, -1).amax(0)
        s_, c_ = (last_wrong + 1)[ever], (mk.sum(0) - 1)[ever]
        j = torch.arange(Lb)[ever]
        cols["pos_block"].append(j)
        cols["pos_answer"].append(int(data["block"][m]) * Lb + j)
        cols["stab"].append(s_)
        cols["commit"].append(c_)
        cols["stab_global"].append(s_ + start_of[m])
        cols["commit_global"].append(c_ + start_of[m])
        cols["prompt"].append(torch.full((len(j),), int(data["prompt_index"][m])))
    return Stabilisation(**{k: torch.cat(v) for k, v in cols.items()})


def spearman(x, y) -> float:
    """Rank correlation; tied values get the mean of the ranks they occupy."""
    def ranks(v):
        v = torch.as_tensor(v)
        uniq, inv = torch.unique(v, return_inverse=True)
        count = torch.bincount(inv, minlength=len(uniq)).double()
        first = torch.cumsum(count, 0)
        return (first - (count - 1) / 2)[inv]
    rx, ry = ranks(x), ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    norm = rx.norm() * ry.norm()
    return float((rx * ry).sum() / norm) if norm > 0 else float("nan")


def spearman_bootstrap(groups: list[tuple[torch.Tensor, torch.Tensor]], n_boot: int = 2000, seed: int = 0,
                       level: float = 0.95) -> tuple[float, float, float]:
    """:func:`cluster_bootstrap` of the :func:`spearman` correlation of the groups' (x, y) pairs concatenated, the
    groups (prompts) resampled whole: the same resamples (the same draws of the same generator) and the same
    values up to the order of floating-point sums, computed for every resample at once.

    A resample's ranks depend only on how many of its pairs take each (x, y) value, so each group is reduced to
    its counts over the distinct pairs once, and a resample's counts are its groups' counts weighted by how
    often it drew each (one matrix product for all resamples); tied values get the mean of their ranks.
    """
    if not groups:
        raise ValueError("need at least one cluster")
    _, ix = torch.unique(torch.cat([torch.as_tensor(g[0]) for g in groups]), return_inverse=True)
    _, iy = torch.unique(torch.cat([torch.as_tensor(g[1]) for g in groups]), return_inverse=True)
    nx, ny = int(ix.max()) + 1, int(iy.max()) + 1
    group = torch.repeat_interleave(torch.arange(len(groups)), torch.tensor([len(g[0]) for g in groups]))
    table = torch.zeros(len(groups), nx * ny, dtype=torch.float64)
    table.index_put_((group, ix * ny + iy), torch.ones(len(ix), dtype=torch.float64), accumulate=True)
    idx = np.random.default_rng(seed).integers(0, len(groups), size=(n_boot, len(groups)))
    drawn = torch.from_numpy(np.stack([np.bincount(row, minlength=len(groups)) for row in idx])).double()
    chunk = max(1, (1 << 22) // (nx * ny))                        # resamples at a time: about 32 MB of counts
    boots = torch.cat([_spearman_of_counts((part @ table).view(len(part), nx, ny))
                       for part in drawn.split(chunk)]).numpy()
    boots = boots[np.isfinite(boots)]     # a resample without the data the statistic needs is skipped
    if not len(boots):
        raise ValueError("the statistic is undefined on every resample")
    value = float(_spearman_of_counts(table.sum(0).view(1, nx, ny))[0])
    return (value, *percentile_interval(boots, level))


def _spearman_of_counts(counts: torch.Tensor) -> torch.Tensor:
    """[R] rank correlations of R samples given as [R, nx, ny] counts of each (x, y) pair (nan where undefined)."""
    cx, cy = counts.sum(2), counts.sum(1)                         # [R, nx], [R, ny]: counts of each value
    rx = torch.cumsum(cx, 1) - (cx - 1) / 2                        # mean rank of each x value in its sample
    ry = torch.cumsum(cy, 1) - (cy - 1) / 2
    mean = (cx.sum(1, keepdim=True) + 1) / 2                       # the mean of ranks 1..N
    dx, dy = rx - mean, ry - mean
    cov = torch.einsum("rxy,rx,ry->r", counts, dx, dy)
    norm = ((cx * dx ** 2).sum(1) * (cy * dy ** 2).sum(1)).sqrt()
    return torch.where(norm > 0, cov / norm, torch.full_like(cov, float("nan")))


def rightward(st: Stabilisation, **boot) -> Claim:
    """Figure 2: tokens further right stabilise later, inside the block and in the whole answer
    (Spearman correlation of position and stabilisation step > 0; prompts resampled)."""
    def corr(pos, step):
        groups = [(pos[st.prompt == p], step[st.prompt == p]) for p in st.prompt.unique().tolist()]
        return spearman_bootstrap(groups, **boot), len(groups)
    (v1, lo1, hi1), n = corr(st.pos_block, st.stab)
    (v2, lo2, hi2), _ = corr(st.pos_answer, st.stab_global)
    return Claim("Tokens further right stabilise later (within the block, and by position in the answer)",
                 "Fig. 2", [Finding("Spearman(position in block, stabilisation step)", v1, lo1, hi1, n),
                            Finding("Spearman(position in answer, stabilisation step from the start)",
                                    v2, lo2, hi2, n)])


def extrapolable(earlier: torch.Tensor, crossed: torch.Tensor, **boot) -> Finding:
    """Figures 3-4: of the tokens whose confidence crosses the threshold while masked ([B, L] ``crossed``),
    the share (%) that CE commits earlier with the token it finally gets ([B, L] ``earlier``); prompts
    (rows) resampled."""
    rows = [(int(e.sum()), int(c.sum())) for e, c in zip(earlier, crossed)]

    def stat(clusters) -> float:
        crossings = sum(c for _, c in clusters)
        return 100.0 * sum(e for e, _ in clusters) / crossings if crossings else float("nan")

    value, lo, hi = cluster_bootstrap(rows, stat, **boot)
    return Finding("tokens CE commits before the threshold, with their final token (% of crossings)",
                   value, lo, hi, len(rows), 0.0)
