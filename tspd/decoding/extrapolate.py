"""Confidence Extrapolation (CE): paper Section 3.3 and Appendix A.7.

CE forecasts where a token's confidence is heading and hands the controller a conservative look-ahead
confidence instead of the current one, so that a token on a steady upward trend can be fixed before it
crosses the controller's threshold by itself.

Per generated position j it runs a Kalman filter on a transformed confidence y_t(j) = phi(c_t(j)):

    signal "logodds" (Section 3.3):  y = log(c / (1 - c))  of the top-1 probability c
    signal "margin"  (Appendix A.7): y = l1 - l2           the top-1/top-2 logit gap
    phi^{-1} = sigmoid for both (for the margin, sigmoid(l1 - l2) = p1 / (p1 + p2)).

with a level-velocity state x = [l, v] (Eq. 5), A = [[1, 1], [0, 1]], process noise Q = diag(q_level,
q_vel) and observation noise R. The h-step forecast (Eq. 6) is x_{t+h} = A^h x and
P_{t+h} = A^h P A^h^T + Q_h with Q_h = sum_{i<h} A^i Q A^i^T; its level variance has the closed form

    sigma_h^2 = P00 + 2h P01 + h^2 P11 + h q_level + q_vel (h-1) h (2h-1) / 6.

Risk-aware horizon (Eqs. 7-9): with cov(j) the fraction of fixed positions left of j in the block,
r = clamp((cov - tau) / (1 - tau), 0, 1), h_pot = H r, LB_h = l_h - z sigma_h, and
h* = max{1 <= h <= h_pot : sigmoid(LB_h) >= c_min}, or h* = 0 when none passes.

What the controller sees (choices of this implementation, documented here once):
  * h* = 0: the raw confidence (no forecast is trusted, so nothing changes).
  * h* > 0: max(raw, sigmoid(LB_{h*})). The paper consumes sigmoid(LB_{h*}) "in place of" the raw
    value; taking the max keeps CE one-sided: it can only bring a commit forward, and never makes a
    token that is already confident look less confident because its far forecast is uncertain.
  * u (Appendix A.3's optional TSPD feature): 1 - exp(-sigma_{h*} / u_scale) in [0, 1), the forecast
    std at the chosen horizon (the filtered std at h* = 0); 0 at positions that are not masked.
  * Positions that are not masked get their raw confidence and u = 0; their filter is frozen.

The state lives per generated position for the whole generation; a position is updated only at
steps where it is observed (it is in the current block) and still masked. When a position's top-1
token changes (``reset_on_flip``), its filter restarts: the trend of a different token says nothing.
Everything is vectorised over [B, L] and over horizons; there is no Python loop over tokens.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from tspd.decoding.features import StepStats
from tspd.decoding.torchscript import compiled

SIGNALS = ("logodds", "margin")


@dataclass
class CEConfig:
    signal: str = "logodds"   # "logodds" (Section 3.3) or "margin" (Appendix A.7's logit gap)
    tau: float = 0.6          # coverage threshold; paper default (Table 10a)
    H: int = 20               # maximum look-ahead in steps; paper default (Table 10b)
    z: float = 1.645          # risk tolerance: one-sided 95 % Gaussian lower bound
    c_min: float = 0.9        # a forecast lower bound must reach this confidence; 0.9 is the usual
                              # commit threshold (Fast-dLLM), so a lifted token is one a threshold rule
                              # would accept
    q_level: float = 0.05     # process noise of the level per step (log-odds^2): jitter of the trace
    q_vel: float = 0.01       # process noise of the velocity: how fast a trend may bend (0.1/step std)
    r: float = 0.25           # observation noise (log-odds^2): a 0.5 std step-to-step wobble
    p_vel0: float = 1.0       # prior variance of the velocity at a filter's first observation
    eps: float = 1e-6         # confidences are clamped to [eps, 1 - eps] so log-odds stay finite (|y| <= 13.8)
    u_scale: float = 4.0      # sigma (log-odds) at which u = 1 - 1/e: spreads u over the sigmas seen (0.3-8)
    reset_on_flip: bool = True  # restart a position's filter when its top-1 token changes

    def __post_init__(self):
        if self.signal not in SIGNALS:
            raise ValueError(f"signal must be one of {SIGNALS}, got {self.signal!r}")
        if not 0.0 <= self.tau < 1.0:
            raise ValueError(f"tau must lie in [0, 1), got {self.tau}")
        if self.H < 0:
            raise ValueError(f"H must be >= 0, got {self.H}")
        if not 0.0 < self.c_min < 1.0:
            raise ValueError(f"c_min must lie in (0, 1), got {self.c_min}")
        if min(self.q_level, self.q_vel, self.p_vel0) < 0 or self.r <= 0:
            raise ValueError("noise variances must be non-negative (and r positive)")


# ------------------------------------------------------------------------------------------------
# Pure functions
# ------------------------------------------------------------------------------------------------
def kalman_step(l, v, p00, p01, p11, y, q_level, q_vel, r):
    """One predict + update of the constant-velocity filter (Eq. 5), elementwise over any shape.

    P is symmetric and stored as (p00, p01, p11). Returns the filtered (l, v, p00, p01, p11). The noises
    ``q_level``, ``q_vel``, ``r`` are floats or 0-dim tensors (the loop's: :class:`Constants`).
    """
    # predict: x = A x, P = A P A^T + Q
    l = l + v
    p01 = p01 + p11
    p00, p11 = p00 + p01 + p01 - p11 + q_level, p11 + q_vel     # P00 + 2 P01 + P11 (old P01, P11)
    # update with H = [1, 0]
    s = p00 + r
    k0, k1 = p00 / s, p01 / s
    innov = y - l
    keep = 1 - k0
    return l + k0 * innov, v + k1 * innov, keep * p00, keep * p01, p11 - k1 * p01


def horizon_terms(horizons: torch.Tensor, q_level: float, q_vel: float) -> tuple[torch.Tensor, ...]:
    """Per-horizon constants of Eq. 6: (h, 2h, h^2, (Q_h)_00) with (Q_h)_00 = h q_level + q_vel (h-1)h(2h-1)/6."""
    h = horizons.float()
    return h, 2 * h, h * h, h * q_level + q_vel * (h - 1) * h * (2 * h - 1) / 6


def forecast(l, v, p00, p01, p11, terms: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]):
    """Level mean and variance h steps ahead (Eq. 6) for every horizon: [...] -> [..., H + 1].

    ``terms`` = :func:`horizon_terms`; sigma_h^2 = P00 + 2h P01 + h^2 P11 + (Q_h)_00.
    """
    return forecast_columns(l[..., None], v[..., None], p00[..., None], p01[..., None], p11[..., None], terms)


def forecast_columns(l, v, p00, p01, p11, terms: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]):
    """:func:`forecast` of a state whose channels already end in a horizon axis of 1: [..., 1] -> [..., H + 1]."""
    h, h2, hh, q_h = terms
    mean = torch.addcmul(l, h, v)
    var = torch.addcmul(torch.addcmul(p00 + q_h, h2, p01), hh, p11)
    return mean, var


def left_coverage(fixed: torch.Tensor) -> torch.Tensor:
    """Fraction of fixed positions strictly left of each position in its block: [B, Lb] -> [B, Lb].

    The first position has nothing to its left inside the block (everything before it is fixed), so 1.
    """
    f = fixed.float()
    j = torch.arange(f.shape[-1], device=f.device, dtype=f.dtype).clamp_min_(1)
    cov = (f.cumsum(-1) - f) / j
    cov[..., 0] = 1.0
    return cov


def select_horizon(mean: torch.Tensor, var: torch.Tensor, horizons: torch.Tensor, h_pot: torch.Tensor,
                   z: float, c_min: float):
    """Eq. 9: the largest h in [1, h_pot] whose lower bound sigmoid(mean - z sigma) >= c_min, else 0.

    Returns (h* [...], LB at h* [...], sigma at h* [...]) with ``horizons`` = 0..H along the last dim.
    """
    h = horizons if horizons.dtype == h_pot.dtype else horizons.to(h_pot.dtype)
    index = torch.arange(mean.shape[-1], device=mean.device)
    return pick_horizon(mean, var, h <= h_pot[..., None], z, logit(c_min), index)


def logit(c: float) -> float:
    """log(c / (1 - c)): sigmoid(x) >= c exactly when x >= logit(c)."""
    return math.log(c / (1 - c))


def pick_horizon(mean: torch.Tensor, var: torch.Tensor, allowed: torch.Tensor, z, lb_min, index: torch.Tensor):
    """:func:`select_horizon` given which horizons each position may look at (``allowed`` [..., H + 1],
    h <= h_pot), ``lb_min`` = logit(c_min) and ``index`` = 0..H (long): (h*, LB at h*, sigma at h*).
    ``z`` and ``lb_min`` are floats or 0-dim tensors."""
    sigma = var.clamp_min(0).sqrt()
    lb = mean - z * sigma
    # sigmoid(lb) >= c_min  <=>  lb >= logit(c_min); horizon 0 never qualifies (its index is 0 whether or
    # not it passes, and the largest passing index is taken)
    ok = (lb >= lb_min) & allowed
    idx = torch.where(ok, index, 0).amax(-1, keepdim=True)
    return idx[..., 0], lb.gather(-1, idx)[..., 0], sigma.gather(-1, idx)[..., 0]


@functools.lru_cache(maxsize=32)
def allowed_horizons(block_length: int, H: int, tau: float, device: torch.device) -> torch.Tensor:
    """Eqs. 7-8 for every case at once: ``[j, k, h]`` is whether block position j, with k of the j
    positions left of it fixed, may look h steps ahead (h <= h_pot). Made once per block width with the
    very operations :func:`left_coverage` and the update apply to each position (the same numbers), so
    a step only counts and looks up; never written to."""
    j = torch.arange(block_length, device=device, dtype=torch.float32)[:, None].clamp_min(1)
    cov = torch.arange(block_length + 1, device=device, dtype=torch.float32)[None, :] / j
    cov[0] = 1.0
    h_pot = H * ((cov - tau) / (1 - tau)).clamp(0, 1)
    return torch.arange(H + 1, device=device, dtype=torch.float32) <= h_pot[..., None]


class Constants(NamedTuple):
    """What every step of one CE setting reads and never writes (:func:`constants`). The scalars are
    0-dim float32 tensors: on a CPU a Python float beside a float32 tensor is converted to a tensor of
    that dtype at every operation, which costs as much as the operation on a block."""
    index: torch.Tensor        # [H + 1] long: the horizons 0..H
    terms: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]   # horizon_terms of 0..H (Eq. 6)
    prior: torch.Tensor        # [4, 1, 1] a fresh filter's (v, P00, P01, P11)
    q_level: torch.Tensor
    q_vel: torch.Tensor
    r: torch.Tensor
    z: torch.Tensor
    lb_min: torch.Tensor       # logit(c_min)
    neg_u_scale: torch.Tensor  # -u_scale
    zero: torch.Tensor


def constants(config: CEConfig, device) -> Constants:
    """The :class:`Constants` of ``config`` on ``device``: the same for every ``generate`` call with these
    settings, so made once (never written to)."""
    c = config
    return _constants(c.H, c.q_level, c.q_vel, c.r, c.p_vel0, c.z, c.c_min, c.u_scale, torch.device(device))


@functools.lru_cache(maxsize=16)
def _constants(H: int, q_level: float, q_vel: float, r: float, p_vel0: float, z: float, c_min: float,
               u_scale: float, device: torch.device) -> Constants:
    """:func:`constants` by value (a ``CEConfig`` is mutable, so it is no cache key)."""
    horizons = torch.arange(H + 1, device=device, dtype=torch.float32)
    scalar = functools.partial(torch.tensor, dtype=torch.float32, device=device)
    return Constants(index=torch.arange(H + 1, device=device), terms=horizon_terms(horizons, q_level, q_vel),
                     prior=torch.tensor([0.0, r, 0.0, p_vel0], device=device)[:, None, None],
                     q_level=scalar(q_level), q_vel=scalar(q_vel), r=scalar(r), z=scalar(z),
                     lb_min=scalar(logit(c_min)), neg_u_scale=scalar(-u_scale), zero=scalar(0.0))


def ce_step(state: torch.Tensor, token: torch.Tensor, y: torch.Tensor, x0: torch.Tensor, raw: torch.Tensor,
            masked: torch.Tensor, allowed: torch.Tensor, consts: Constants, reset_on_flip: bool,
            uncertainty: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """One CE step over a block (Section 3.3, Eqs. 5-9): the filters of the masked positions take in
    ``y``, then each position's horizon and look-ahead confidence; returns (conf~, h*, u or None).

    ``state`` [5, B, Lb] (l, v, P00, P01, P11) and ``token`` [B, Lb] are views of the extrapolator's
    state, updated in place; ``allowed`` [B, Lb, H + 1] is h <= h_pot (Eqs. 7-8); ``raw`` the float
    confidence of the candidates ``x0``. Tensor operations only, so that TorchScript can run it
    (:mod:`tspd.decoding.torchscript`).
    """
    # a candidate id is never negative, so a changed token also covers "never observed" (-1)
    fresh = masked & ((x0 != token) if reset_on_flip else (token < 0))
    l, v, p00, p01, p11 = state.unbind(0)
    stepped = torch.stack(kalman_step(l, v, p00, p01, p11, y, consts.q_level, consts.q_vel, consts.r))
    torch.where(masked, stepped, state, out=state)
    level, rest = state[0], state[1:]                  # a fresh filter: y, then the prior (v, P00, P01, P11)
    torch.where(fresh, y, level, out=level)
    torch.where(fresh, consts.prior, rest, out=rest)
    torch.where(masked, x0, token, out=token)
    # always forecast, even when no position may look ahead yet (h* = 0 then): testing for that first
    # would make every step wait for the device, and the forecast is a [B, Lb, H+1] tensor
    l, v, p00, p01, p11 = state.unsqueeze(-1).unbind(0)
    mean, var = forecast_columns(l, v, p00, p01, p11, consts.terms)
    h_star, lb, sigma = pick_horizon(mean, var, allowed, consts.z, consts.lb_min, consts.index)
    h_star = torch.where(masked, h_star, 0)
    conf = torch.where(h_star > 0, torch.maximum(raw, torch.sigmoid(lb)), raw)
    u = torch.where(masked, 1 - torch.exp(sigma / consts.neg_u_scale), consts.zero) if uncertainty else None
    return conf, h_star, u


def log_odds(conf: torch.Tensor, eps: float) -> torch.Tensor:
    """y = log(c / (1 - c)) of float confidences clamped to [eps, 1 - eps] (Section 3.3's signal)."""
    p = conf.clamp(eps, 1 - eps)
    return torch.log(p) - torch.log1p(-p)


def ce_update(channels: torch.Tensor, tokens: torch.Tensor, start: int, conf: torch.Tensor, gap: torch.Tensor | None,
              x0: torch.Tensor, masked: torch.Tensor, table: torch.Tensor, offsets: torch.Tensor, consts: Constants,
              eps: float, reset_on_flip: bool, uncertainty: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """:func:`ce_step` on the block at ``start`` of the whole state (``channels`` [5, B, L_gen], ``tokens``
    [B, L_gen]), with its inputs made here: the signal y (the log-odds of ``conf``, or the logit ``gap``
    where the margin signal is used) and h <= h_pot looked up in ``table`` (:func:`allowed_horizons`
    flattened to [Lb (Lb + 1), H + 1], ``offsets`` = j (Lb + 1), :func:`allowed_in`).
    One function, so that TorchScript runs the whole update between two Python calls."""
    Lb = masked.shape[1]
    raw = conf.float()
    y = log_odds(raw, eps) if gap is None else gap
    return ce_step(channels.narrow(2, start, Lb), tokens.narrow(1, start, Lb), y, x0, raw, masked,
                   allowed_in(table, offsets, masked), consts, reset_on_flip, uncertainty)


def allowed_in(table: torch.Tensor, offsets: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """h <= h_pot [B, Lb, H + 1] of each block position, looked up in :func:`allowed_horizons` flattened to
    ``table`` [Lb (Lb + 1), H + 1] by the position j (``offsets`` = j (Lb + 1)) and the count of fixed
    positions left of it; for a masked position that is the count up to and including it (a fixed one's
    horizon is never used)."""
    rows = (~masked).cumsum(-1) + offsets
    return table.index_select(0, rows.view(-1)).view(masked.shape[0], masked.shape[1], table.shape[1])


# ------------------------------------------------------------------------------------------------
# The stateful extrapolator used by the generation loop
# ------------------------------------------------------------------------------------------------
class ConfidenceExtrapolator:
    """Kalman state per generated position; ``update`` is called once per forward by ``generate``.

    The state is one tensor holding (l, v, P00, P01, P11) per position, stored channel first
    ([5, B, L_gen]; ``state`` shows it as [B, L_gen, 5]), so a step (:func:`ce_step`) is a few dozen
    tensor operations over the whole block whatever its width (the controller-overhead budget of Section
    5.4): the five filters of a position move together, a fresh one starts from its prior in the same
    select, and the horizons are searched as one [B, Lb, H + 1] tensor. On a CPU the step runs under
    TorchScript (:mod:`tspd.decoding.torchscript`: the same kernels, less Python between them).
    ``token`` remembers each position's top-1 at its last update (-1: never observed).
    """

    def __init__(self, config: CEConfig | None = None, **kwargs):
        self.config = dataclasses.replace(config or CEConfig(), **kwargs)
        self.last_h: torch.Tensor | None = None   # [B, Lb] horizon chosen at the last step (diagnostics)
        self._lookup: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def reads(self) -> frozenset:
        """Block statistics it reads beyond the candidates and their confidences (tspd.decoding.reads)."""
        return frozenset({"logit_gap"}) if self.config.signal == "margin" else frozenset()

    def reset(self, batch: int, gen_length: int, device) -> None:
        self.channels = torch.zeros(5, batch, gen_length, device=device)
        self.token = torch.full((batch, gen_length), -1, dtype=torch.long, device=device)
        self.consts = constants(self.config, torch.device(device))
        self.run_step = compiled(ce_update, device)   # TorchScript on a CPU, bit for bit ce_update

    # views of the state, for inspection and tests
    state = property(lambda self: self.channels.permute(1, 2, 0))   # [B, L_gen, 5]
    l = property(lambda self: self.channels[0])
    v = property(lambda self: self.channels[1])
    p00 = property(lambda self: self.channels[2])
    p01 = property(lambda self: self.channels[3])
    p11 = property(lambda self: self.channels[4])

    def allowed(self, masked: torch.Tensor) -> torch.Tensor:
        """h <= h_pot (Eqs. 7-8) for each block position [B, Lb, H + 1] (:func:`allowed_in`)."""
        return allowed_in(*self.lookup(masked), masked)

    def lookup(self, masked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(:func:`allowed_horizons` of the block's width flattened to [Lb (Lb + 1), H + 1], the offsets
        j (Lb + 1) of its rows j), made once per width."""
        Lb = masked.shape[1]
        if self._lookup is None or self._lookup[1].numel() != Lb:
            c = self.config
            self._lookup = (allowed_horizons(Lb, c.H, c.tau, masked.device).view(-1, c.H + 1),
                            torch.arange(0, Lb * (Lb + 1), Lb + 1, device=masked.device))
        return self._lookup

    def observe(self, stats: StepStats) -> torch.Tensor:
        """The transformed confidence y = phi(c) of the configured signal."""
        c = self.config
        if c.signal == "margin":
            return stats.logit_gap.float()
        return log_odds(stats.conf.float(), c.eps)

    def update(self, block_start: int, stats: StepStats, masked: torch.Tensor, uncertainty: bool = True):
        """Fold in one step of the block at ``block_start``; returns (conf~, u), each [B, Lb].

        ``stats`` are the block's step statistics, ``masked`` [B, Lb] the positions still masked
        before this step's commit (the only ones whose filter moves). ``uncertainty`` False skips u
        (returned as None) for a controller that does not read it.
        """
        c = self.config
        gap = stats.logit_gap.float() if c.signal == "margin" else None
        conf, self.last_h, u = self.run_step(self.channels, self.token, block_start, stats.conf, gap, stats.x0, masked,
                                             *self.lookup(masked), self.consts, c.eps, c.reset_on_flip, uncertainty)
        return conf.to(stats.conf.dtype), u


@dataclass
class Replay:
    """CE re-run over a recorded generation (:func:`replay`); S steps, B prompts, L generated positions."""
    observed: torch.Tensor   # [S, B, L] bool: still masked at the step, so the filter moved
    state: torch.Tensor      # [S, B, L, 5] filter state (l, v, P00, P01, P11) after the step
    lifted: torch.Tensor     # [S, B, L] bool: CE chose a horizon h* > 0 (the confidence was raised)
    reproduced: bool         # every step handed the controller the confidence the decoder's CE did


def replay(trace, config: CEConfig, block_length: int, before=None) -> Replay:
    """Re-run CE over a trace recorded by ``generate(..., ce=config, record_trace=True)`` (Figures 3-4).

    The filter sees exactly what the decoder's saw: each step's block statistics and mask. ``before``,
    if given, is called as ``before(step, block_slice, stats, masked, extrapolator)`` ahead of each
    update, so a caller can read the filter's prior state (Figure 4's one-step forecast check).
    """
    S, B, L = trace.conf.shape
    ext = ConfidenceExtrapolator(config)
    ext.reset(B, L, "cpu")
    observed = torch.zeros(S, B, L, dtype=torch.bool)
    state = torch.zeros(S, B, L, 5)
    lifted = torch.zeros(S, B, L, dtype=torch.bool)
    reproduced = True
    for s in range(S):
        b = int(trace.block[s])
        sl = slice(b * block_length, (b + 1) * block_length)
        masked = trace.masked[s][:, sl]
        stats = StepStats(x0=trace.x0[s][:, sl], conf=trace.conf[s][:, sl], entropy=trace.entropy[s][:, sl],
                          margin=trace.margin[s][:, sl], logit_gap=torch.zeros_like(trace.conf[s][:, sl]))
        if before is not None:
            before(s, sl, stats, masked, ext)
        seen, _ = ext.update(b * block_length, stats, masked)
        reproduced &= torch.allclose(seen.float(), trace.seen_conf[s][:, sl], atol=1e-6)
        observed[s][:, sl], state[s], lifted[s][:, sl] = masked, ext.state, ext.last_h > 0
    return Replay(observed, state, lifted, bool(reproduced))
