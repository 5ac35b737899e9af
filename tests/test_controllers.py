"""Every decoding controller: the loop's invariants end to end, and each rule on hand-made steps."""
from __future__ import annotations

import pytest
import torch

from tspd.decoding.controllers import StepView, make_controller
from tspd.decoding.controllers.credit import CreditDecoding
from tspd.decoding.controllers.egp import EGP
from tspd.decoding.controllers.joint import joint_prefix
from tspd.decoding.controllers.learn2pd import Learn2PD, Learn2PDNet, eot_position
from tspd.decoding.controllers.prophet import Prophet
from tspd.decoding.controllers.tspd import TSPD, TSPDConfig, TSPDNet, features_without
from tspd.decoding.controllers.weights import save_controller
from tspd.decoding.loop import generate

from conftest import EOS, MASK, prompts, random_model, seeded_net, spied

GEN, BLOCK = 32, 8


def controller(name: str):
    """A fresh controller for the invariant runs (learned ones with seeded random weights)."""
    if name == "tspd":
        return TSPD(net=seeded_net("tspd"))
    if name == "learn2pd":
        return Learn2PD(net=seeded_net("learn2pd"))
    if name == "learn2pd-eot":
        net = seeded_net("learn2pd")
        net.mlp[-1].bias.data += 4.0          # an eager filter, so that EoTP and acceptance both happen
        return Learn2PD(net=net, eot=True)
    if name == "prophet-eager":
        return Prophet(thresholds=(1.0, 1.0, 1.0))
    return make_controller(name)


NAMES = ["vanilla", "fast-dllm", "prophet", "prophet-eager", "credit", "learn2pd", "learn2pd-eot", "tspd", "joint",
         "egp"]


@pytest.mark.parametrize("ce", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_loop_invariants(name, ce):
    plain = random_model(seed=7, scale=0.8)
    model, spy = spied(plain)
    ps = prompts(2, seed=9)
    if name == "egp":
        ref = generate(plain, ps, gen_length=GEN, block_length=BLOCK).token_ids
        ctrl = EGP(reference=ref)
    else:
        ctrl = controller(name)
    out = generate(model, ps, gen_length=GEN, block_length=BLOCK, controller=ctrl, ce=ce, record_trace=True)
    P = out.prompt_length
    assert out.nfe == len(spy.calls) == out.trace.block.numel()            # one NFE per forward
    assert max(out.nfe_per_sample) <= out.nfe
    assert (out.token_ids != MASK).all()
    canvases = [c["ids"][:, P:] for c in spy.calls] + [out.token_ids]
    for t in range(out.nfe):
        before, after = canvases[t], canvases[t + 1]
        changed = before != after
        assert not (changed & (before != MASK)).any(), "a committed token changed"
        b = int(out.trace.block[t])
        inside = torch.zeros_like(changed)
        inside[:, b * BLOCK:(b + 1) * BLOCK] = True
        active = (before[:, b * BLOCK:(b + 1) * BLOCK] == MASK).any(-1)
        if name != "egp":                                                   # the oracle may wait
            assert (changed & inside).any(-1)[active].all(), "a step with masks left committed nothing"
        outside = changed & ~inside
        if name.startswith("prophet"):
            assert not (after[outside.any(-1)] == MASK).any(), "Prophet may leave its block only to finish"
        elif name == "learn2pd-eot":
            assert (after[outside] == EOS).all(), "EoTP may write only EOS outside the block"
        else:
            assert not outside.any(), "committed outside the current block"


def test_egp_reproduces_vanilla_in_fewer_forwards():
    m = random_model(seed=3, scale=0.8)
    ps = prompts(4, seed=5)
    for cache in ("none", "dual"):
        van = generate(m, ps, gen_length=GEN, block_length=BLOCK, cache=cache)
        egp = generate(m, ps, gen_length=GEN, block_length=BLOCK, cache=cache, controller="egp",
                       controller_kwargs={"reference": van.token_ids})
        assert torch.equal(egp.token_ids, van.token_ids)
        assert egp.nfe < van.nfe


def test_eager_rules_save_forwards():
    m = random_model(seed=7, scale=0.8)
    ps = prompts(2, seed=9)
    van = generate(m, ps, gen_length=GEN, block_length=BLOCK)
    eager = generate(m, ps, gen_length=GEN, block_length=BLOCK, controller=Prophet(thresholds=(0.0, 0.0, 0.0)))
    assert eager.nfe == 1 and (eager.token_ids != MASK).all()              # finishes at the first step
    credit = generate(m, ps, gen_length=GEN, block_length=BLOCK, controller="credit", threshold=0.3)
    assert credit.nfe < van.nfe


# ------------------------------------------------------------------------------------------------
# Rules on hand-made steps
# ------------------------------------------------------------------------------------------------
def view(**over) -> StepView:
    """A one-row step view of a 4-wide block at the start of an 8-token generated region."""
    B, Lb, L, V = 1, 4, 8, 6
    conf = torch.tensor([[0.9, 0.5, 0.3, 0.2]])
    x0 = torch.tensor([[1, 2, 3, 4]])
    base = dict(step=0, global_step=0, total_steps=8, block=0, num_blocks=2, block_start=0, steps_per_block=4,
                logits=torch.zeros(B, Lb, V), x0=x0, conf=conf, raw_conf=conf, entropy=torch.zeros(B, Lb),
                margin=torch.zeros(B, Lb), logit_gap=torch.ones(B, Lb), ewma=conf, momentum=torch.zeros(B, Lb),
                phi=torch.linspace(0, 1, Lb), u=torch.zeros(B, Lb), masked=torch.ones(B, Lb, dtype=torch.bool),
                quota=torch.tensor([1]), canvas_x0=torch.cat([x0, torch.full((B, L - Lb), 5)], 1),
                canvas_conf=torch.cat([conf, torch.full((B, L - Lb), 0.5)], 1),
                canvas_masked=torch.ones(B, L, dtype=torch.bool), eos_id=5, mask_id=0,
                canvas_gap=torch.ones(B, L))
    base.update(over)
    return StepView(**base)


def test_prophet_threshold_schedule_and_answer_window():
    p = Prophet()
    p.reset(1, 8, 4, "cpu")
    assert [p.threshold(view(global_step=g, total_steps=9)) for g in (0, 1, 2, 3, 5, 6, 8)] == \
        [7.5, 7.5, 5.0, 5.0, 2.5, 2.5, 2.5]                                 # progress (g + 1) / 9
    gap = torch.full((1, 4), 3.0)
    late = dict(global_step=7, logit_gap=gap)
    d = p.decide(view(**late))                                              # the later block's gap is 1 < 2.5
    assert not d.finish.any() and d.commit.sum() == 1
    d = p.decide(view(**late, canvas_gap=torch.full((1, 8), 3.0)))
    assert d.finish.all()
    d = Prophet(answer="block").decide(view(**late))                        # only the block is watched
    assert d.finish.all()
    d = p.decide(view(global_step=0, logit_gap=gap, canvas_gap=torch.full((1, 8), 3.0)))
    assert not d.finish.any()                                               # early: needs 7.5


def test_credit_accumulates_decays_and_resets():
    c = CreditDecoding(threshold=0.99)
    c.reset(1, 8, 4, "cpu")
    c.start_block(0)
    logits = torch.tensor([[[2.0, 1.9, 0, 0, 0, 0]] * 4])
    v0 = view(logits=logits, x0=torch.zeros(1, 4, dtype=torch.long))
    d0 = c.decide(v0)
    first = c.credit.clone()
    assert first[0, :, 0].gt(0).all() and first[0, :, 1:].eq(0).all()      # only the top-1 earns credit
    assert d0.commit.sum() >= 1 and (d0.tokens == 0).all()                  # at least one commit
    d1 = c.decide(view(logits=logits, x0=torch.zeros(1, 4, dtype=torch.long), step=1,
                       masked=torch.tensor([[False, True, True, True]])))
    p1 = torch.softmax(logits[0, 0], -1).max()
    assert torch.allclose(c.credit[0, 1, 0], first[0, 1, 0] * 0.8 + p1 ** 0.2)
    assert torch.allclose(c.credit[0, 0, 0], first[0, 0, 0] * 0.8)         # decoded: decays, no boost
    fused_conf = torch.softmax(logits[0, 1] + 0.7 * torch.log1p(c.credit[0, 1]), -1).max()
    assert fused_conf > torch.softmax(logits[0, 1], -1).max()               # credit lifts confidence
    assert d1.commit[0, 0].item() is False
    c.start_block(1)
    assert c.credit is None


def test_credit_changes_the_token_that_kept_winning():
    c = CreditDecoding(threshold=1.0)
    c.reset(1, 8, 4, "cpu")
    c.start_block(0)
    a = torch.tensor([[[3.0, 0, 0, 0, 0, 0]] * 4])
    for step in range(3):
        c.decide(view(logits=a, step=step, x0=torch.zeros(1, 4, dtype=torch.long)))
    b = torch.tensor([[[3.0, 3.05, 0, 0, 0, 0]] * 4])                       # token 1 now barely wins
    d = c.decide(view(logits=b, step=3, x0=torch.ones(1, 4, dtype=torch.long)))
    assert (d.tokens == 0).all()                                            # token 0's credit keeps it


def test_learn2pd_eot_rules():
    v = view(x0=torch.tensor([[1, 5, 5, 2]]), canvas_x0=torch.tensor([[1, 5, 5, 2, 5, 5, 3, 3]]),
             canvas_conf=torch.tensor([[0.9, 0.5, 0.3, 0.2, 0.7, 0.95, 0.1, 0.1]]))
    commit = torch.tensor([[True, True, True, False]])
    accepted = torch.tensor([[False, False, True, False]])
    assert eot_position(v, commit, accepted).tolist() == [2]               # first accepted EOS
    assert eot_position(v, commit, torch.zeros_like(accepted)).tolist() == [5]   # most confident masked EOS
    none = view(canvas_x0=torch.tensor([[1, 2, 3, 4, 1, 1, 1, 1]]))
    assert eot_position(none, commit, accepted).tolist() == [-1]


def test_learn2pd_accepts_above_threshold_plus_schedule():
    net = Learn2PDNet()
    for p in net.parameters():
        p.data.zero_()
    net.mlp[-1].bias.data[:] = torch.tensor([5.0, -5.0] * 16)                # accept positions 0 and 2
    d = Learn2PD(net=net).decide(view(conf=torch.tensor([[0.1, 0.9, 0.2, 0.3]])))
    assert d.commit.tolist() == [[True, True, True, False]]                 # accept {0, 2} + top-1 {1}
    with pytest.raises(ValueError, match="exceeds the filter width"):
        net(torch.zeros(1, 33))


def test_egp_commits_matches_and_copies_when_stuck():
    ref = torch.tensor([[1, 9, 3, 9, 7, 7, 7, 7]])
    e = EGP(reference=ref)
    e.reset(1, 8, 4, "cpu")
    e.start_block(0)
    d = e.decide(view())
    assert d.commit.tolist() == [[True, False, True, False]] and d.tokens.tolist() == [[1, 9, 3, 9]]
    d = e.decide(view(masked=torch.tensor([[False, True, False, True]])))   # argmax unchanged: stuck
    assert d.commit.tolist() == [[False, True, False, True]]
    with pytest.raises(ValueError, match="reference"):
        EGP(reference=ref).reset(2, 8, 4, "cpu")


def test_tspd_state_is_carried_within_a_block_and_reset_between_blocks():
    net = seeded_net("tspd", seed=1)
    t = TSPD(net=net)
    t.reset(1, 8, 4, "cpu")
    t.start_block(0)
    v = view()
    first = t.gate_probs(v).clone()
    second = t.gate_probs(v).clone()
    assert not torch.allclose(first, second)                                # memory over steps
    t.start_block(1)
    assert torch.equal(t.gate_probs(v), first)
    # all positions in one LSTM step == each position's own trace
    r = torch.stack([v.conf, v.entropy, v.ewma, v.momentum, v.phi.expand(1, 4), v.u], -1)[0]
    for j in range(4):
        alone, _ = net(r[j].view(1, 1, -1))
        assert torch.allclose(torch.sigmoid(alone)[0, 0], first[0, j])


def test_tspd_gate_is_hard_at_one_half():
    net = seeded_net("tspd")
    for p in net.parameters():
        p.data.zero_()
    net.head.bias.data.fill_(1e-4)                                          # pi just above 0.5 everywhere
    d = TSPD(net=net).decide(view(masked=torch.tensor([[True, False, True, True]])))
    assert d.commit.tolist() == [[True, False, True, True]]
    net.head.bias.data.fill_(-1e-4)
    assert not TSPD(net=net).decide(view()).commit.any()


@pytest.mark.parametrize("arch,layers,hidden,params", [("lstm", 2, 8, 1097), ("lstm", 2, 12, 2221),
                                                       ("lstm", 2, 16, 3729), ("lstm", 1, 16, 1553),
                                                       ("mlp", 2, 16, 401)])
def test_tspd_architectures(arch, layers, hidden, params):
    net = TSPDNet(TSPDConfig(arch=arch, layers=layers, hidden=hidden))
    assert sum(p.numel() for p in net.parameters()) == params
    logits, _ = net(torch.rand(3, 5, 6))
    assert logits.shape == (3, 5)


def test_tspd_feature_ablations():
    assert features_without(["confidence"]) == ("entropy", "momentum", "position", "u")
    assert features_without(["position"]) == ("conf", "entropy", "ewma", "momentum", "u")
    net = TSPDNet(TSPDConfig(features=features_without(["entropy", "momentum"])))
    t = TSPD(net=net)
    t.reset(1, 8, 4, "cpu")
    assert t.gate_probs(view()).shape == (1, 4)
    with pytest.raises(ValueError):
        TSPDConfig(features=("conf", "nonsense"))


def test_learned_controllers_load_weights_beside_the_model(tmp_path):
    m = random_model(seed=2)
    m.path = tmp_path
    for ctrl in (TSPD(), Learn2PD()):
        with pytest.raises(FileNotFoundError, match="train-controller"):
            ctrl.bind(m)
    net = seeded_net("tspd", hidden=8, layers=1)
    save_controller(net, dict(kind="tspd", arch="lstm", layers=1, hidden=8, features=list(net.config.features)),
                    tmp_path / "controllers" / "tspd")
    save_controller(seeded_net("learn2pd"), dict(kind="learn2pd", width=32), tmp_path / "controllers" / "learn2pd")
    for controller in ("tspd", "learn2pd"):
        out = generate(m, prompts(2), gen_length=16, block_length=8, controller=controller)
        assert (out.token_ids != MASK).all()
    t = TSPD(weights=tmp_path / "controllers" / "tspd.safetensors")
    t.bind(m)
    assert t.net.config.hidden == 8
    with pytest.raises(ValueError, match="expected 'learn2pd'"):
        Learn2PD(weights=tmp_path / "controllers" / "tspd").bind(m)


def test_joint_bound_commits_sure_tokens_together_and_unsure_ones_alone():
    masked = torch.ones(3, 5, dtype=torch.bool)
    conf = torch.tensor([[0.99, 0.99, 0.99, 0.99, 0.99],      # sure: all together (0.95 >= 0.4)
                         [0.60, 0.10, 0.60, 0.20, 0.30],      # two at 0.6: 0.36 < 0.4, only the first goes
                         [0.30, 0.20, 0.10, 0.05, 0.25]])     # none at the bound: the most confident still goes
    got = joint_prefix(conf, masked, 0.4)
    assert got[0].all()
    assert got[1].tolist() == [True, False, False, False, False]
    assert got[2].tolist() == [True, False, False, False, False]
    assert joint_prefix(conf, masked, 0.3)[1].tolist() == [True, False, True, False, False]   # 0.36 >= 0.3


def test_joint_bound_skips_committed_positions_and_empty_rows():
    conf = torch.tensor([[0.999, 0.5, 0.95, 0.9], [0.9, 0.9, 0.9, 0.9]])
    masked = torch.tensor([[False, True, True, True], [False, False, False, False]])
    got = joint_prefix(conf, masked, 0.9)
    assert got[0].tolist() == [False, False, True, False]     # 0.95 alone; 0.95 * 0.9 < 0.9
    assert not got[1].any()


def test_joint_bound_takes_fewer_forwards_at_a_lower_bound():
    m = random_model(seed=3, scale=0.8)
    ps = prompts(2, seed=5)
    nfe = [generate(m, ps, gen_length=GEN, block_length=BLOCK, controller="joint", controller_kwargs={"bound": b}).nfe
           for b in (1.0, 0.05)]
    assert nfe[0] == GEN and nfe[1] < nfe[0]                  # bound 1: one token a step, as vanilla
