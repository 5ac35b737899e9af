"""The step's cheaper paths give what the general ones give (issue 34): TSPD's fused gate step, the
sort-free top-1, Fast-dLLM's rule without a sort, CE's horizon table, the block schedule read once on
the host, and a learned controller's weights read once."""
from __future__ import annotations

import pytest
import torch

from tspd.decoding.controllers import rank_in_row, top_k_mask, top_one
from tspd.decoding.controllers.fast_dllm import FastDLLM
from tspd.decoding.controllers.gate_step import GateStep
from tspd.decoding.controllers.tspd import TSPDConfig, TSPDNet, build_tspd_net, features_without
from tspd.decoding.controllers.weights import load_net, save_controller
from tspd.decoding.extrapolate import allowed_horizons, left_coverage
from tspd.decoding.schedule import BlockSchedule

from conftest import random_model
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
    for _ in range(30):
        masked = torch.rand(2, 8, generator=g) > 0.5
        h_pot = H * ((left_coverage(~masked) - tau) / (1 - tau)).clamp(0, 1)
        direct = horizons <= h_pot[..., None]
        looked_up = table[torch.arange(8), (~masked).cumsum(-1)]
        assert torch.equal(looked_up[masked], direct[masked])             # masked positions: the ones CE moves


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
