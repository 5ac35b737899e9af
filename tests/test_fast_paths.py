"""The step's cheaper paths give what the general ones give (issue 34): TSPD's fused gate step, the
sort-free top-1, Fast-dLLM's rule without a sort, CE's horizon table, CE's step under TorchScript (bit
for bit, with its eager fallback), the block schedule read once on the host, and a learned
controller's weights read once."""
from __future__ import annotations

import pytest
import torch

from tspd.decoding.controllers import rank_in_row, top_k_mask, top_one
from tspd.decoding.controllers.fast_dllm import FastDLLM
from tspd.decoding.controllers.gate_step import GateStep
from tspd.decoding.controllers.tspd import TSPDConfig, TSPDNet, build_tspd_net, features_without
from tspd.decoding.controllers.weights import load_net, save_controller
from tspd.decoding.extrapolate import CEConfig, ConfidenceExtrapolator, allowed_horizons, ce_step, ce_update, left_coverage
from tspd.decoding.features import StepStats
from tspd.decoding.loop import generate
from tspd.decoding.schedule import BlockSchedule
from tspd.decoding.torchscript import ENV, compiled

from conftest import prompts, random_model
from test_controllers import view


@pytest.mark.parametrize("arch,layers,hidden,features", [("lstm", 2, 16, None), ("lstm", 1, 8, None),
                                                         ("lstm", 4, 12, None), ("lstm", 2, 16, ("position",)),
                                                         ("mlp", 2, 16, None)])
def test_the_gate_step_is_the_network_one_step_at_a_time(arch, layers, hidden, features):
    torch.manual_seed(layers + hidden)
    net = TSPDNet(TSPDConfig(arch=arch, layers=layers, hidden=hidden,
                             features=features_without(features) if features else TSPDConfig().features)).eval()
    F = len(net.config.features)
    net.mean.uniform_(-0.5, 0.5)
    net.std.uniform_(0.5, 2.0)                           # a fitted standardisation, folded into the first layer
    trace = torch.rand(4, 24, F)                           # 4 steps of 24 positions
    with torch.no_grad():
        whole, _ = net(trace)
    step, state = GateStep(net), None
    for t in range(4):
        logits, state = step(trace[t], state)
        assert torch.allclose(logits, whole[t], atol=1e-5), t


def test_top_one_is_rank_zero_and_the_uniform_quota_paths_agree():
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        score = torch.randint(0, 4, (3, 9), generator=g).float()          # many ties
        valid = torch.rand(3, 9, generator=g) > 0.4
        valid[2] = False                                                   # a row with nothing left
        assert torch.equal(top_one(score, valid), valid & (rank_in_row(score, valid) == 0))
        for k in (0, 1, 2):
            quota = torch.full((3,), k)
            assert torch.equal(top_k_mask(score, valid, quota, uniform=k), top_k_mask(score, valid, quota))


def test_fast_dllm_threshold_rule_equals_its_ranked_form():
    """The rule commits its most confident masked position itself (so the loop need not force it)."""
    g = torch.Generator().manual_seed(1)
    for _ in range(50):
        conf = torch.randint(0, 6, (1, 4), generator=g).float() / 5           # ties, and values at the threshold
        masked = torch.rand(1, 4, generator=g) > 0.3
        v = view(conf=conf, raw_conf=conf, masked=masked)
        rank = rank_in_row(conf, masked)
        ranked = masked & ((rank == 0) | (conf >= 0.6))
        got = FastDLLM(threshold=0.6).decide(v).commit
        assert torch.equal(got, ranked) and (got.any(-1) == masked.any(-1)).all()


def test_the_horizon_table_is_the_coverage_rule_at_every_position():
    H, tau = 20, 0.6
    table = allowed_horizons(8, H, tau, torch.device("cpu"))
    horizons = torch.arange(H + 1, dtype=torch.float32)
    g = torch.Generator().manual_seed(2)
    ext = ConfidenceExtrapolator(CEConfig(H=H, tau=tau))
    for _ in range(30):
        masked = torch.rand(2, 8, generator=g) > 0.5
        h_pot = H * ((left_coverage(~masked) - tau) / (1 - tau)).clamp(0, 1)
        direct = horizons <= h_pot[..., None]
        looked_up = table[torch.arange(8), (~masked).cumsum(-1)]
        assert torch.equal(looked_up[masked], direct[masked])             # masked positions: the ones CE moves
        assert torch.equal(ext.allowed(masked), looked_up)                # the step's flat lookup


def random_block_steps(n: int, batch: int, block: int, gen_length: int, seed: int):
    """``n`` steps of CE's input over the blocks of a generation: (block start, statistics, still masked)."""
    g = torch.Generator().manual_seed(seed)
    for s in range(n):
        masked = torch.rand(batch, block, generator=g) < max(0.05, 1 - (s % 8) / 8)   # fills up over 8 steps
        conf = torch.rand(batch, block, generator=g) ** 0.3
        conf[0, :3] = torch.tensor([0.0, 1.0, 0.9]) if s % 5 == 0 else conf[0, :3]  # clamped ends, the threshold
        stats = StepStats(x0=torch.randint(0, 40 if s % 3 else 3, (batch, block), generator=g), conf=conf,
                          logit_gap=3 * torch.randn(batch, block, generator=g))
        yield (s // 8) % (gen_length // block) * block, stats, masked


@pytest.mark.parametrize("settings", [{}, {"signal": "margin"}, {"reset_on_flip": False}, {"H": 5, "tau": 0.2}])
def test_ce_under_torchscript_is_the_eager_step_bit_for_bit(settings, monkeypatch):
    monkeypatch.setenv(ENV, "0")
    eager = ConfidenceExtrapolator(CEConfig(**settings))
    eager.reset(2, 64, "cpu")
    monkeypatch.setenv(ENV, "1")
    scripted = ConfidenceExtrapolator(CEConfig(**settings))
    scripted.reset(2, 64, "cpu")
    assert eager.run_step is ce_update and isinstance(scripted.run_step, torch.jit.ScriptFunction)
    for k, (start, stats, masked) in enumerate(random_block_steps(300, 2, 16, 64, seed=len(settings))):
        (c1, u1), (c2, u2) = (ext.update(start, stats, masked, uncertainty=k % 4 > 0) for ext in (eager, scripted))
        assert torch.equal(c1, c2) and (u1 is u2 is None or torch.equal(u1, u2)), k
        assert torch.equal(eager.channels, scripted.channels) and torch.equal(eager.token, scripted.token), k
        assert torch.equal(eager.last_h, scripted.last_h), k


def test_torchscript_falls_back_to_the_eager_function(monkeypatch):
    namespace = {}
    exec("def no_source(x):\n    return x + 1\n", namespace)         # no file to read: TorchScript cannot compile it
    with pytest.warns(UserWarning, match="runs eagerly"):
        assert compiled(namespace["no_source"], "cpu") is namespace["no_source"]
    assert compiled(ce_step, "meta") is ce_step                           # only the CPU runs the scripted step
    monkeypatch.setattr(torch.jit, "onednn_fusion_enabled", lambda: True)
    assert compiled(ce_step, "cpu") is ce_step                            # a CPU fuser would change the rounding
    monkeypatch.undo()
    monkeypatch.setenv(ENV, "0")
    assert compiled(ce_step, "cpu") is ce_step


def test_a_decoding_with_ce_is_the_same_scripted_or_eager(monkeypatch):
    model = random_model(seed=3)
    torch.manual_seed(0)
    config = dict(controller="tspd", controller_kwargs={"net": TSPDNet(TSPDConfig())}, ce=True, cache="dual",
                  gen_length=32, block_length=16, record_trace=True)
    runs = []
    for flag in ("0", "1"):
        monkeypatch.setenv(ENV, flag)
        runs.append(generate(model, prompts(2), **config))
    eager, scripted = runs
    assert torch.equal(eager.token_ids, scripted.token_ids) and eager.nfe == scripted.nfe
    assert torch.allclose(eager.trace.seen_conf, scripted.trace.seen_conf, rtol=0, atol=0, equal_nan=True)   # NaN: unseen


def test_the_schedule_knows_on_the_host_when_every_row_commits_the_same():
    even = BlockSchedule(torch.tensor([8, 8]), 8)
    assert [even.at(i)["uniform_quota"] for i in range(9)] == [1] * 8 + [0]
    mixed = BlockSchedule(torch.tensor([8, 5]), 8)
    assert mixed.at(0)["uniform_quota"] == 1 and mixed.at(6)["uniform_quota"] is None
    assert mixed.at(6)["quota"].tolist() == [1, 0]


def test_learned_weights_are_read_once_while_their_files_stay_the_same(tmp_path):
    model = random_model(seed=2)
    model.path = tmp_path
    torch.manual_seed(0)
    net = TSPDNet(TSPDConfig(hidden=8, layers=1))
    stem = tmp_path / "controllers" / "tspd"
    save_controller(net, dict(kind="tspd", arch="lstm", layers=1, hidden=8, features=list(net.config.features)), stem)
    first = load_net(model, "tspd", None, "tspd", build_tspd_net)
    assert load_net(model, "tspd", None, "tspd", build_tspd_net) is first
    torch.manual_seed(1)
    save_controller(TSPDNet(TSPDConfig(hidden=8, layers=1)), dict(kind="tspd", arch="lstm", layers=1, hidden=8,
                                                                  features=list(net.config.features)), stem)
    again = load_net(model, "tspd", None, "tspd", build_tspd_net)
    assert again is not first and not torch.equal(again.head.weight, first.head.weight)
