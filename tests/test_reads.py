"""Statistics on demand (tspd.decoding.reads): a step computes what its readers declared, and each
statistic is the same number whichever others are computed (issue 34)."""
from __future__ import annotations

import pytest
import torch

from tspd.decoding.controllers import Controller, Decision, make_controller
from tspd.decoding.controllers.vanilla import Vanilla
from tspd.decoding.features import STATS, SmoothedConfidence, gumbel_argmax, step_stats
from tspd.decoding.loop import generate
from tspd.decoding.reads import EVERYTHING, VIEW, StepPlan

from conftest import prompts, random_model, spied


def reference_stats(logits, temperature=0.0, dtype=torch.float32, generator=None) -> dict:
    """Every statistic as the loop computed them before they were computed on demand: one softmax, a
    gather and two top-2s over the whole vocabulary."""
    logits = logits.to(dtype)
    x0 = gumbel_argmax(logits, temperature, generator)
    logp = torch.log_softmax(logits, dim=-1)
    p = logp.exp()
    top_l, top_p = logits.topk(2, dim=-1).values, p.topk(2, dim=-1).values
    return dict(x0=x0, conf=p.gather(-1, x0[..., None]).squeeze(-1), entropy=-(p * logp).nan_to_num().sum(-1),
                margin=top_p[..., 0] - top_p[..., 1], logit_gap=top_l[..., 0] - top_l[..., 1])


def logits_with_ties(seed: int, shape=(2, 12, 40)) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(shape, generator=g) * 4
    logits[..., 3] = float("-inf")                        # a forbidden candidate (the loop's [MASK])
    logits[0, 0, 7] = logits[0, 0].max()                  # an exact tie for the top
    logits[1, 2, :] = 0.5                                 # a flat row
    return logits


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_statistic_is_bit_for_bit_the_full_computation(dtype, seed):
    logits = logits_with_ties(seed)
    ref = reference_stats(logits, dtype=dtype)
    for fields in [(), ("entropy",), ("margin",), ("logit_gap",), STATS]:
        got = step_stats(logits, dtype=dtype, fields=fields)
        for name in {"x0", "conf", *fields}:
            assert torch.equal(getattr(got, name), ref[name]), (name, fields)
        assert all(getattr(got, f) is None for f in set(STATS) - {"x0", "conf", *fields})


def test_sampled_candidates_draw_the_same_random_stream():
    logits = logits_with_ties(4)
    ref = reference_stats(logits, 0.8, generator=torch.Generator().manual_seed(3))
    got = step_stats(logits, 0.8, generator=torch.Generator().manual_seed(3), fields=STATS)
    assert all(torch.equal(getattr(got, k), v) for k, v in ref.items())


def test_plans_follow_the_declarations():
    vanilla = StepPlan.of(make_controller("vanilla").reads)
    assert vanilla.window == frozenset() and vanilla.block == {"x0", "conf"} and vanilla.view == {"quota"}
    assert StepPlan.of(make_controller("fast-dllm").reads).view == frozenset()
    tspd_like = StepPlan.of({"entropy", "ewma", "momentum", "u"})
    assert tspd_like.window == {"conf"} and tspd_like.block == {"x0", "conf", "entropy"}
    prophet = StepPlan.of(make_controller("prophet").reads)
    assert prophet.window == {"x0", "logit_gap"} and "logit_gap" in prophet.block
    recorded = StepPlan.of((), ce_reads={"logit_gap"}, recorder_reads={"x0", "conf", "entropy", "margin"})
    assert recorded.window == {"x0", "conf", "entropy", "margin"} and recorded.block == {"x0", "conf", "logit_gap"}
    assert StepPlan.of(Controller.reads).view == EVERYTHING == set(VIEW)
    with pytest.raises(ValueError, match="unknown view fields"):
        StepPlan.of({"entropy", "nonsense"})


@pytest.mark.parametrize("reads,recorder", [((), ()), ({"ewma"}, ()), ({"entropy", "canvas_gap"}, ()),
                                            ((), ("x0", "conf", "entropy", "margin"))])
def test_the_block_statistics_are_the_windows_own_rows(reads, recorder):
    logits = logits_with_ties(5)
    plan = StepPlan.of(reads, recorder_reads=recorder)
    win, blk = plan.stats(logits, 4, 10, 0.0, torch.float32)
    assert (win is None) == (not plan.window)
    ref = reference_stats(logits)
    for name in plan.block:
        assert torch.equal(getattr(blk, name), ref[name][:, 4:10]), name
    for name in plan.window:
        assert torch.equal(getattr(win, name), ref[name]), name


class Seen(Controller):
    """Vanilla's rule, declaring ``reads``; keeps which optional view fields it was shown."""
    fixed_schedule, force_progress = True, False

    def __init__(self, reads):
        self.reads, self.shown = frozenset(reads), set()

    def decide(self, view):
        self.shown |= {f for f in VIEW if getattr(view, f) is not None}
        return Vanilla().decide(view)


def test_a_step_shows_what_is_read_and_decodes_the_same_either_way():
    m, ps = random_model(seed=3, scale=0.8), prompts(2, seed=4)
    everything, only = Seen(EVERYTHING), Seen({"quota"})
    full = generate(m, ps, gen_length=16, block_length=8, controller=everything, record_trace=True)
    lean = generate(m, ps, gen_length=16, block_length=8, controller=only, record_trace=True)
    assert everything.shown == set(VIEW) and only.shown == {"quota"}
    assert torch.equal(full.token_ids, lean.token_ids) and full.nfe == lean.nfe
    assert all(torch.equal(getattr(full.trace, k).nan_to_num(-7), getattr(lean.trace, k).nan_to_num(-7))
               for k in ("conf", "entropy", "margin", "seen_conf"))


class Watches(Seen):
    """Vanilla's rule; keeps the block's EWMA confidence and momentum it was shown at every step."""

    def __init__(self):
        super().__init__({"quota", "ewma", "momentum"})
        self.seen_history = []

    def decide(self, view):
        self.seen_history.append((view.ewma.clone(), view.momentum.clone()))
        return super().decide(view)


@pytest.mark.parametrize("cache", ["none", "dual"])
def test_the_history_a_block_reads_is_the_same_whether_or_not_a_trace_is_recorded(cache):
    """Without a recorder the head runs from the block's first row (positions left of it are fixed): the
    block's EWMA and momentum must be those of a recorded decoding, whose forwards cover every row."""
    m, ps = random_model(seed=5, scale=0.8), prompts(2, seed=6)
    lean, traced = Watches(), Watches()
    a = generate(m, ps, gen_length=24, block_length=8, cache=cache, controller=lean)
    b = generate(m, ps, gen_length=24, block_length=8, cache=cache, controller=traced, record_trace=True)
    assert torch.equal(a.token_ids, b.token_ids) and a.nfe == b.nfe == 24
    assert all(torch.equal(x, y) for s, t in zip(lean.seen_history, traced.seen_history) for x, y in zip(s, t))
    assert lean.seen_history[9][0].abs().sum() > 0     # block 1's second step: its EWMA holds block 0's steps


@pytest.mark.parametrize("reads,record,temperature,rows", [
    ({"quota"}, False, 0.0, [8, 8, 8]),                  # vanilla's reads: the block alone
    ({"quota", "ewma"}, False, 0.0, [24, 16, 8]),        # the history H: the block and what follows it
    ({"quota"}, True, 0.0, [24] * 3),                    # the recorder: the whole generated region
    ({"quota"}, False, 0.5, [24] * 3)])                  # sampling: one random stream over the region
def test_the_head_runs_on_the_rows_a_step_reads(reads, record, temperature, rows):
    m, spy = spied(random_model(seed=2))
    out = generate(m, prompts(1, seed=3), gen_length=24, block_length=8, steps=6, temperature=temperature, seed=0,
                   record_trace=record, controller=Seen(reads))
    assert [c["logits"].shape[1] for c in spy.calls] == [r for r in rows for _ in range(2)] and out.nfe == 6


def test_smoothed_confidence_updates_only_the_rows_that_observed():
    sm = SmoothedConfidence(2, 6, "cpu")
    first = torch.tensor([[0.2, 0.4, 0.6], [0.1, 0.3, 0.5]])
    sm.update(1, first)
    sm.update(1, torch.full((2, 3), 0.8), rows=torch.tensor([True, False]))
    expect = 0.25 * torch.tensor(0.8) + 0.75 * first[0]
    assert torch.equal(sm.ewma[0, 1:4], expect) and torch.equal(sm.momentum[0, 1:4], expect - first[0])
    assert torch.equal(sm.ewma[1, 1:4], first[1]) and (sm.momentum[1] == 0).all()     # row 1 idled
    assert sm.seen[:, 1:4].all() and not sm.seen[:, [0, 4, 5]].any()


class Decides(Controller):
    """Commits everything at once; reads nothing (for the schedule-less view)."""
    reads = frozenset()

    def decide(self, view):
        assert view.quota is None and view.uniform_quota is None and view.entropy is None
        return Decision(commit=view.masked)


def test_a_controller_that_reads_no_schedule_gets_none():
    out = generate(random_model(seed=1), prompts(1, seed=2), gen_length=8, block_length=8, controller=Decides())
    assert out.nfe == 1
