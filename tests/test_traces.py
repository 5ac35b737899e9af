"""Stage 1 trace collection and stage 2 controller training, end to end on a tiny random model."""
from __future__ import annotations

import json

import pytest
import torch

from tspd.cli import main as cli
from tspd.decoding.config import DecodeConfig
from tspd.decoding.controllers.learn2pd import Learn2PD
from tspd.decoding.controllers.tspd import TSPD
from tspd.decoding.loop import generate
from tspd.training.traces import CHANNELS, collect, load_prompts, load_traces, own_traces
from tspd.training.train_controller import ControllerTrainConfig, thinned, train

from conftest import MASK, TEST_MODEL, prompts, random_model

GEN, BLOCK = 32, 8
WINDOW = DecodeConfig(gen_length=GEN, block_length=BLOCK, ce=True)   # what the traces are collected with


@pytest.fixture(scope="module")
def model():
    return random_model(seed=7, scale=0.8)


@pytest.fixture(scope="module")
def traces(model):
    return collect(model, prompts(10, seed=3), WINDOW, batch_size=5, progress=False)


def test_trace_file_layout(model, traces):
    N, M = traces["features"].shape[0], len(traces["offsets"]) - 1
    assert traces["features"].shape == (N, BLOCK, len(CHANNELS)) and traces["labels"].shape == (N, BLOCK)
    assert traces["offsets"][-1] == N and (traces["offsets"].diff() > 0).all()
    assert M == 10 * GEN // BLOCK                                   # one sequence per (prompt, block)
    assert traces["meta"]["egp_matches_vanilla"] == traces["meta"]["egp_rows"] == 10
    assert traces["meta"]["forwards"] < traces["meta"]["vanilla_forwards"]
    f = dict(zip(CHANNELS, traces["features"].unbind(-1)))
    assert ((f["conf"] > 0) & (f["conf"] <= 1)).all() and ((f["u"] >= 0) & (f["u"] < 1)).all()
    assert (f["ce_conf"] >= f["conf"] - 1e-6).all()                # CE only lifts
    # every sequence starts with its block fully masked and ends with something left to fix
    starts = traces["offsets"][:-1]
    assert traces["masked"][starts].all()
    assert traces["masked"][traces["offsets"][1:] - 1].any(-1).all()


def test_labels_are_argmax_equals_final_token(model):
    ps = prompts(2, seed=4)
    data = collect(model, ps, WINDOW.replace(ce=False), controller="vanilla", progress=False)
    final = generate(model, ps, gen_length=GEN, block_length=BLOCK).token_ids
    steps = GEN // (GEN // BLOCK)                                  # vanilla: 8 steps per block, 1 token each
    assert data["features"].shape[0] == 2 * GEN // BLOCK * steps
    out = generate(model, ps, gen_length=GEN, block_length=BLOCK, record_trace=True)
    # sequence (prompt 0, block 1) = global steps 8..15 of the run
    m = 1
    a, b = data["offsets"][m], data["offsets"][m + 1]
    assert data["prompt_index"][m] == 0 and data["block"][m] == 1
    want = out.trace.x0[8:16, 0, BLOCK:2 * BLOCK] == final[0, BLOCK:2 * BLOCK]
    assert torch.equal(data["labels"][a:b], want)
    f = dict(zip(CHANNELS, data["features"][a:b].unbind(-1)))
    assert torch.equal(f["ce_conf"], f["conf"]) and (f["u"] == 0).all()   # CE off


def test_mixed_controller_alternates_batches(model):
    data = collect(model, prompts(4, seed=5), DecodeConfig(gen_length=16, block_length=8), batch_size=2,
                   controller="mixed", progress=False)
    assert data["meta"]["egp_rows"] == 2 and data["meta"]["rows"] == 4


@pytest.mark.parametrize("kind", ["tspd", "learn2pd"])
def test_train_controller_cli_smoke(model, traces, tmp_path, kind):
    path = tmp_path / "traces.pt"
    torch.save(traces, path)
    stem = tmp_path / "zoo" / "controllers" / kind
    args = ["train-controller", "--traces", str(path), "--kind", kind, "--epochs", "4", "--patience", "10",
            "--seed", "1", "--quiet", "--out", str(stem)]
    if kind == "tspd":
        args += ["--hidden", "8", "--drop", "momentum"]
    assert cli(args) == 0
    config = json.loads(stem.with_suffix(".json").read_text())
    curve = json.loads((tmp_path / "zoo" / "controllers" / f"{kind}.curve.json").read_text())
    assert config["kind"] == kind and len(curve["train_loss"]) == len(curve["val_loss"]) == 4
    if kind == "tspd":
        assert config["hidden"] == 8 and "momentum" not in config["features"]
    # the trained controller loads beside the model and decodes
    model.path = tmp_path / "zoo"
    try:
        out = generate(model, prompts(2), gen_length=GEN, block_length=BLOCK, controller=kind, ce=True)
    finally:
        model.path = None
    assert (out.token_ids != MASK).all()


def test_training_is_deterministic_and_learns(traces):
    cfg = ControllerTrainConfig(kind="tspd", hidden=8, epochs=6, patience=10, seed=3)
    a, _, curve = train(traces, cfg, progress=False)
    b, _, _ = train(traces, cfg, progress=False)
    for (k, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), k
    assert curve["train_loss"][-1] < curve["train_loss"][0]
    c, _, _ = train(traces, ControllerTrainConfig(kind="tspd", hidden=8, epochs=6, patience=10, seed=4), progress=False)
    assert not torch.equal(a.head.weight, c.head.weight)


def test_learned_controllers_accept_an_explicit_weights_path(model, traces, tmp_path):
    from tspd.decoding.controllers.weights import save_controller
    for kind, ctrl in (("tspd", TSPD), ("learn2pd", Learn2PD)):
        net, saved, _ = train(traces, ControllerTrainConfig(kind=kind, epochs=1), progress=False)
        save_controller(net, saved, tmp_path / f"my-{kind}")
        c = ctrl(weights=tmp_path / f"my-{kind}.safetensors")
        out = generate(model, prompts(1), gen_length=GEN, block_length=BLOCK, controller=c)
        assert (out.token_ids != MASK).all()


def test_prompt_files(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"question": "a?"}\n{"prompt": "b?"}\n')
    (tmp_path / "p.txt").write_text("one\n\ntwo\nthree\n")
    assert load_prompts(str(tmp_path / "p.jsonl"), None) == ["a?", "b?"]
    assert load_prompts(str(tmp_path / "p.txt"), 2) == ["one", "two"]
    assert len(load_prompts("arith-traces", 3)) == 3
    from tspd.tasks import chain
    assert load_prompts("chain-traces", 2) == [chain.prompt(p) for p in chain.load_split("traces", 2)]
    with pytest.raises(ValueError, match="flan-source"):
        load_prompts("flan", 3)
    bad = tmp_path / "bad.pt"
    torch.save({"x": 1}, bad)
    with pytest.raises(ValueError, match="trace file"):
        load_traces(bad)


def test_training_leaves_torchs_global_random_state_alone(traces):
    state = torch.get_rng_state()
    train(traces, ControllerTrainConfig(kind="learn2pd", epochs=2, seed=5), progress=False)
    assert torch.equal(torch.get_rng_state(), state)


def test_collect_traces_command_collects_with_the_oracle(tmp_path, capsys):
    """`collect-traces --controller egp` (what scripts/train_controllers.sh runs): its --controller is the
    collection policy, not a decoding controller for the decode settings to refuse; without --prompts, the
    prompts are the traces split of the task the model was trained on."""
    out = tmp_path / "t.pt"
    assert cli(["collect-traces", "--model", TEST_MODEL, "--n", "2", "--controller", "egp",
                "--batch-size", "2", "--threads", "1", "--out", str(out)]) == 0, capsys.readouterr().err
    meta = load_traces(str(out))["meta"]
    assert meta["egp_rows"] == 2 and meta["prompt_source"] == own_traces(TEST_MODEL) == "arith-traces"


def test_a_saved_trace_set_is_compressed_and_reads_back_identical(tmp_path):
    from tspd.training.traces import FORMAT, load_traces, save_traces
    data = {"format": FORMAT, "features": torch.zeros(64, 32, 6), "labels": torch.ones(64, 32, dtype=torch.bool),
            "meta": {"model": "m"}}
    data["features"][0, 0] = torch.arange(6.0)
    save_traces(data, tmp_path / "t.pt")
    assert (tmp_path / "t.pt").read_bytes()[:2] == b"\x1f\x8b"
    back = load_traces(tmp_path / "t.pt")
    assert torch.equal(back["features"], data["features"]) and back["meta"] == data["meta"]
    torch.save(data, tmp_path / "old.pt")          # a file written before compression still reads
    assert torch.equal(load_traces(tmp_path / "old.pt")["labels"], data["labels"])


def test_a_long_learning_curve_is_stored_thinned_with_its_first_best_and_last_epochs():
    n, best = 32_818, 32_518
    curve = dict(epoch=list(range(1, n + 1)), val_loss=[1.0 / e for e in range(1, n + 1)], best_epoch=best, kind="learn2pd")
    t = thinned(curve)
    assert len(t["epoch"]) <= 2002 and t["epochs_run"] == n
    assert t["epoch"][0] == 1 and best in t["epoch"] and t["epoch"][-1] == n
    assert all(t["val_loss"][i] == 1.0 / e for i, e in enumerate(t["epoch"]))   # lists stay aligned
    short = dict(epoch=[1, 2, 3], val_loss=[3.0, 2.0, 1.0], best_epoch=3)
    assert thinned(short) == {**short, "epochs_run": 3}
