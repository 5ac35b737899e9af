"""Confidence Extrapolation: the filter, the forecast, the horizon rule and the loop integration."""
from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from tspd.decoding.extrapolate import (CEConfig, ConfidenceExtrapolator, forecast, horizon_terms, kalman_step,
                                       left_coverage, replay, select_horizon)
from tspd.decoding.features import StepStats
from tspd.decoding.loop import generate

from conftest import prompts, random_model


def stats(conf=None, gap=None, x0=None, shape=(1, 4)) -> StepStats:
    z = torch.zeros(shape)
    return StepStats(x0=torch.zeros(shape, dtype=torch.long) if x0 is None else x0,
                     conf=torch.full(shape, 0.5) if conf is None else conf, entropy=z, margin=z,
                     logit_gap=z if gap is None else gap)


def run_trend(ext, a: float, b: float, steps: int, masked=None, shape=(1, 4)):
    masked = torch.ones(shape, dtype=torch.bool) if masked is None else masked
    for t in range(steps):
        out = ext.update(0, stats(gap=torch.full(shape, a + b * t), shape=shape), masked)
    return out


def test_noiseless_linear_trend_recovers_level_and_slope():
    ext = ConfidenceExtrapolator(CEConfig(signal="margin"))
    ext.reset(1, 4, "cpu")
    run_trend(ext, a=-2.0, b=0.35, steps=40)
    assert torch.allclose(ext.v, torch.full_like(ext.v, 0.35), atol=1e-4)
    assert torch.allclose(ext.l, torch.full_like(ext.l, -2.0 + 0.35 * 39), atol=1e-4)


def test_logodds_signal_sees_the_same_trend():
    ext = ConfidenceExtrapolator(CEConfig(signal="logodds"))
    ext.reset(1, 4, "cpu")
    for t in range(30):
        y = torch.full((1, 4), -3.0 + 0.2 * t)
        ext.update(0, stats(conf=torch.sigmoid(y)), torch.ones(1, 4, dtype=torch.bool))
    assert torch.allclose(ext.v, torch.full_like(ext.v, 0.2), atol=1e-3)


def test_forecast_variance_grows_with_the_horizon():
    ext = ConfidenceExtrapolator(CEConfig(signal="margin"))
    ext.reset(1, 4, "cpu")
    run_trend(ext, a=0.0, b=0.5, steps=10)
    h = torch.arange(21)
    mean, var = forecast(ext.l, ext.v, ext.p00, ext.p01, ext.p11, horizon_terms(h, 0.05, 0.01))
    assert (var.diff(dim=-1) > 0).all()
    assert torch.allclose(mean[..., 5], ext.l + 5 * ext.v)


def test_forecast_matches_the_matrix_recursion():
    l, v, p00, p01, p11 = (torch.tensor([x]) for x in (1.0, 0.3, 0.4, 0.1, 0.2))
    q = torch.diag(torch.tensor([0.05, 0.01]))
    A = torch.tensor([[1.0, 1.0], [0.0, 1.0]])
    P = torch.tensor([[0.4, 0.1], [0.1, 0.2]])
    for h in range(6):
        Ah = torch.linalg.matrix_power(A, h)
        Qh = sum((torch.linalg.matrix_power(A, i) @ q @ torch.linalg.matrix_power(A, i).T for i in range(h)),
                 torch.zeros(2, 2))
        want = (Ah @ P @ Ah.T + Qh)[0, 0]
        _, var = forecast(l, v, p00, p01, p11, horizon_terms(torch.tensor([h]), 0.05, 0.01))
        assert torch.allclose(var[0, 0], want, atol=1e-6)


def test_kalman_step_matches_the_textbook_update():
    x, P = torch.tensor([1.0, 0.5]), torch.tensor([[0.4, 0.1], [0.1, 0.2]])
    A, Q, R, y = torch.tensor([[1.0, 1.0], [0.0, 1.0]]), torch.diag(torch.tensor([0.05, 0.01])), 0.25, 2.0
    xp, Pp = A @ x, A @ P @ A.T + Q
    K = Pp[:, 0] / (Pp[0, 0] + R)
    xn, Pn = xp + K * (y - xp[0]), Pp - K[:, None] * Pp[0][None, :]
    got = kalman_step(*(torch.tensor(t) for t in (1.0, 0.5, 0.4, 0.1, 0.2, 2.0)), 0.05, 0.01, R)
    assert torch.allclose(torch.stack(got[:2]), xn) and torch.allclose(got[2], Pn[0, 0])
    assert torch.allclose(got[3], Pn[0, 1]) and torch.allclose(got[4], Pn[1, 1])


def test_left_coverage():
    fixed = torch.tensor([[False, True, True, False, False]])
    assert torch.allclose(left_coverage(fixed), torch.tensor([[1.0, 0.0, 0.5, 2 / 3, 0.5]]))


def test_horizon_rule():
    h = torch.arange(11)
    mean = torch.tensor([[0.0 + 0.5 * k for k in range(11)]])
    var = torch.full((1, 11), 0.01)
    z, c_min = 1.645, 0.9                                     # sigmoid(lb) >= 0.9 <=> lb >= 2.197
    h_star, lb, _ = select_horizon(mean, var, h, torch.tensor([10.0]), z, c_min)
    assert h_star.item() == 10 and math.isclose(lb.item(), 5.0 - 0.1645, rel_tol=1e-5)
    assert select_horizon(mean, var, h, torch.tensor([6.5]), z, c_min)[0].item() == 6   # h <= h_pot
    assert select_horizon(mean, var, h, torch.tensor([4.0]), z, c_min)[0].item() == 0   # none passes: 0
    assert select_horizon(mean, var, h, torch.tensor([0.0]), z, c_min)[0].item() == 0


def test_coverage_below_tau_keeps_the_raw_confidence():
    ext = ConfidenceExtrapolator(CEConfig(signal="margin", tau=0.6))
    ext.reset(1, 4, "cpu")
    # positions 1..3 have nothing fixed to their left: coverage 0 < tau -> h = 0
    conf, u = run_trend(ext, a=0.0, b=1.0, steps=12)
    assert ext.last_h[0, 0] > 0 and (ext.last_h[0, 1:] == 0).all()
    assert torch.equal(conf[0, 1:], torch.full((3,), 0.5)) and conf[0, 0] > 0.9
    assert ((u > 0) & (u < 1)).all()
    # once the left neighbours are fixed the same trend is extrapolated
    masked = torch.tensor([[False, False, True, True]])
    conf, u = ext.update(0, stats(gap=torch.full((1, 4), 12.0)), masked)
    assert ext.last_h[0, 2] > 0 and conf[0, 2] > 0.9
    assert ext.last_h[0, 3] == 3                              # coverage 2/3: r = 1/6, h_pot = 3.3
    assert torch.equal(conf[0, :2], torch.full((2,), 0.5)) and (u[0, :2] == 0).all()   # fixed: raw, u = 0


def test_downward_trend_is_never_lifted():
    ext = ConfidenceExtrapolator(CEConfig(signal="margin", tau=0.0))
    ext.reset(1, 4, "cpu")
    conf, _ = run_trend(ext, a=3.0, b=-0.3, steps=10)
    assert (ext.last_h == 0).all() and torch.equal(conf, torch.full((1, 4), 0.5))


def test_unmasked_positions_are_frozen_and_flips_restart_the_trace():
    ext = ConfidenceExtrapolator(CEConfig(signal="margin", tau=0.0))
    ext.reset(1, 4, "cpu")
    run_trend(ext, a=0.0, b=0.5, steps=8)
    frozen = ext.l[0, 0].clone()
    masked = torch.tensor([[False, True, True, True]])
    x0 = torch.tensor([[0, 0, 7, 0]])                          # position 2's top-1 token changes
    ext.update(0, stats(gap=torch.full((1, 4), 9.0), x0=x0), masked)
    assert ext.l[0, 0] == frozen
    assert ext.v[0, 2] == 0 and ext.l[0, 2] == 9.0 and ext.v[0, 1] > 0


def test_batched_update_equals_one_position_at_a_time():
    torch.manual_seed(0)
    traj = torch.cumsum(torch.rand(15, 3, 5), 0)              # 15 steps, B = 3, Lb = 5
    batched = ConfidenceExtrapolator(CEConfig(signal="margin", tau=0.0))
    batched.reset(3, 5, "cpu")
    m = torch.ones(3, 5, dtype=torch.bool)
    outs = [batched.update(0, stats(gap=traj[t], shape=(3, 5)), m)[0] for t in range(15)]
    single = ConfidenceExtrapolator(CEConfig(signal="margin", tau=0.0))
    single.reset(1, 1, "cpu")
    for t in range(15):
        single.update(0, stats(gap=traj[t, 1:2, 3:4], shape=(1, 1)), torch.ones(1, 1, dtype=torch.bool))
    for name in ("l", "v", "p00", "p01", "p11"):
        assert torch.allclose(getattr(batched, name)[1, 3], getattr(single, name)[0, 0])
    assert outs[-1].shape == (3, 5)


def test_the_loop_builds_its_extrapolator_from_the_settings(monkeypatch):
    from tspd.decoding import loop
    built = []

    class Spy(loop.ConfidenceExtrapolator):
        def __init__(self, config):
            built.append(config)
            super().__init__(config)

    monkeypatch.setattr(loop, "ConfidenceExtrapolator", Spy)
    m = random_model(seed=7, scale=0.8)
    generate(m, prompts(1), gen_length=16, block_length=8, controller="fast-dllm")
    generate(m, prompts(1), gen_length=16, block_length=8, controller="fast-dllm", ce=True)
    generate(m, prompts(1), gen_length=16, block_length=8, controller="fast-dllm", ce=True, ce_kwargs={"tau": 0.4, "H": 10})
    assert built == [CEConfig(), CEConfig(tau=0.4, H=10)]
    with pytest.raises(ValueError, match="signal"):
        generate(m, prompts(1), gen_length=16, block_length=8, ce=True, ce_kwargs={"signal": "entropy"})


def test_generate_with_ce_only_lifts_confidence():
    m = random_model(seed=7, scale=0.8)
    out = generate(m, prompts(2), gen_length=32, block_length=8, controller="fast-dllm", ce=True, record_trace=True,
                   ce_kwargs={"tau": 0.0, "c_min": 0.5})
    tr = out.trace
    seen = ~tr.seen_conf.isnan()
    assert (tr.seen_conf[seen] >= tr.conf[seen] - 1e-6).all()
    assert (tr.seen_conf[seen] > tr.conf[seen] + 1e-3).any()      # CE did lift some tokens


def test_replay_reproduces_the_decoders_ce_and_calls_before_each_update():
    m = random_model(seed=7, scale=0.8)
    cfg = CEConfig(tau=0.0, c_min=0.5)
    out = generate(m, prompts(2), gen_length=32, block_length=8, controller="fast-dllm", ce=True,
                   ce_kwargs=dataclasses.asdict(cfg), record_trace=True)
    seen_steps = []
    rep = replay(out.trace, cfg, block_length=8, before=lambda s, sl, stats, masked, ext: seen_steps.append(s))
    S = out.trace.conf.shape[0]
    assert rep.reproduced and seen_steps == list(range(S))
    assert rep.lifted.any() and not (rep.lifted & ~rep.observed).any()   # only masked positions are lifted
    other = replay(out.trace, CEConfig(tau=0.0, c_min=0.99), block_length=8)   # not what the decoder ran
    assert not other.reproduced
