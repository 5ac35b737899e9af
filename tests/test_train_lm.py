"""``python -m tspd train-lm``: batching, the LLaDA SFT loss, the schedule and a tiny end-to-end run."""
from __future__ import annotations

import csv
import dataclasses
import json
import math

import pytest
import torch

from tspd import load_model
from tspd.tasks import arith
from tspd.models.char_tokenizer import build_tokenizer
from tspd.training.lm.config import LMTrainConfig
from tspd.training.lm.data import encode_answer, make_batch
from tspd.training.lm.arch import model_config
from tspd.training.lm.objective import lr_factor, sft_loss, stratified_uniform
from tspd.training.lm.outputs import STATE
from tspd.training.train_lm import train
from tspd.stats import wilson

# threads=1: tiny matmuls gain nothing from a second thread and stall badly when the CPU is shared
TINY = dict(d_model=32, n_layers=2, n_heads=2, mlp_hidden=64, threads=1)


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def test_make_batch_left_pads_like_inference(tokenizer):
    problems = arith.load_split("test", 3)
    b = make_batch(tokenizer, problems, gen_length=128, prompt_multiple=32)
    P = b.prompt_width
    assert P % 32 == 0 and P >= max(len(p["question"]) for p in problems)
    assert b.input_ids.shape == b.attention_mask.shape == b.position_ids.shape == (3, P + 128)
    for i, p in enumerate(problems):
        n = len(p["question"])
        assert b.attention_mask[i, :P - n].sum() == 0 and b.attention_mask[i, P - n:].all()
        assert (b.input_ids[i, :P - n] == tokenizer.pad_token_id).all()
        assert tokenizer.decode(b.input_ids[i, P - n:P]) == p["question"]
        assert b.position_ids[i, P - n] == 0
        assert b.position_ids[i, -1] == n + 128 - 1
        answer = b.input_ids[i, P:].tolist()
        k = len(p["answer"])
        assert tokenizer.decode(answer[:k]) == p["answer"]
        assert answer[k:] == [tokenizer.eos_token_id] * (128 - k)


def test_encode_answer_never_truncates(tokenizer):
    assert len(encode_answer(tokenizer, "#### 1", 8)[0]) == 8
    with pytest.raises(ValueError):
        encode_answer(tokenizer, "x" * 8, 8)          # no room for an EOS after the answer


def test_batch_stream_raises_instead_of_hanging(tokenizer):
    from tspd.training.lm.stream import BatchStream
    stream = BatchStream(tokenizer, LMTrainConfig(out="", batch_size=2, gen_length=16))   # answers do not fit
    try:
        with pytest.raises(ValueError, match="training batch"):   # one line on the command line
            next(stream)
    finally:
        stream.close()


def test_model_config_reads_ids_from_tokenizer(tokenizer):
    cfg = model_config(LMTrainConfig(out="", **TINY), tokenizer)
    assert cfg.vocab_size == len(tokenizer)
    assert cfg.mask_token_id == tokenizer.mask_token_id
    assert cfg.eos_token_id == cfg.pad_token_id == tokenizer.eos_token_id
    assert cfg.rope_theta == 10000.0 and cfg.max_sequence_length == 1024   # a prompt before twice the window fits


class _Recorder(torch.nn.Module):
    """Uniform logits; remembers its input. CE of every position is then log(V)."""

    def __init__(self, vocab: int):
        super().__init__()
        self.vocab, self.seen = vocab, None

    def forward(self, input_ids, attention_mask=None, position_ids=None, logits_from=0):
        self.seen = input_ids.clone()
        B, T = input_ids.shape
        return torch.zeros(B, T - logits_from, self.vocab, requires_grad=True)


def test_sft_loss_masks_answer_only_and_weights_by_one_over_t(tokenizer):
    b = make_batch(tokenizer, arith.load_split("test", 4), gen_length=128, prompt_multiple=32)
    model, mask_id, P = _Recorder(len(tokenizer)), tokenizer.mask_token_id, b.prompt_width
    loss = sft_loss(model, b, mask_id, eps=1e-3, generator=torch.Generator().manual_seed(0))
    assert torch.equal(model.seen[:, :P], b.input_ids[:, :P])        # the prompt is never masked
    masked = model.seen[:, P:] == mask_id
    assert masked.any() and (~masked).any()
    unmasked = ~masked
    assert torch.equal(model.seen[:, P:][unmasked], b.input_ids[:, P:][unmasked])
    # replay the generator: t per row, then the same Bernoulli draws
    g = torch.Generator().manual_seed(0)
    t = 1e-3 + (1 - 1e-3) * stratified_uniform(4, "cpu", g)
    assert torch.equal(torch.rand(4, 128, generator=g) < t, masked)
    expected = (masked.sum(-1) / t[:, 0] * math.log(len(tokenizer)) / 128).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    # EOS padding is part of the answer region and can be masked
    eos_region = b.input_ids[:, P:] == tokenizer.eos_token_id
    assert (masked & eos_region).any()


def test_lr_schedule():
    assert lr_factor(0.0, 0.1, 0.1) == pytest.approx(1e-3)
    assert lr_factor(0.05, 0.1, 0.1) == pytest.approx(0.5)
    assert lr_factor(0.1, 0.1, 0.1) == pytest.approx(1.0)
    assert lr_factor(1.0, 0.1, 0.1) == pytest.approx(0.1)
    values = [lr_factor(p / 100, 0.1, 0.1) for p in range(10, 101)]
    assert all(a >= b for a, b in zip(values, values[1:]))


def test_cli_flags_match_config():
    import argparse

    from tspd.commands import train_lm
    p = argparse.ArgumentParser()
    train_lm.add_arguments(p)
    args = p.parse_args(["--out", "x", "--max-steps", "3", "--compile", "--lr", "0.01", "--masking", "prefix",
                         "--mask-mix", "0.5"])
    cfg = LMTrainConfig(**{k: getattr(args, k) for k in LMTrainConfig.__dataclass_fields__})
    assert (cfg.max_steps, cfg.compile, cfg.lr, cfg.minutes, cfg.device) == (3, True, 0.01, None, "cpu")
    assert cfg.d_model == 128 and cfg.n_layers == 4 and cfg.n_heads == 4 and not cfg.resume
    assert (cfg.masking, cfg.mask_mix, cfg.tokenizer) == ("prefix", 0.5, "bpe")
    with pytest.raises(SystemExit):
        p.parse_args(["--out", "x", "--masking", "autoregressive"])      # one line from argparse, no traceback
    assert (cfg.gen_length, cfg.block_length) == (arith.GEN_LENGTH, arith.BLOCK_LENGTH)


def test_tiny_training_run_writes_a_loadable_checkpoint(tmp_path):
    out = tmp_path / "tiny"
    cfg = LMTrainConfig(out=str(out), **TINY, batch_size=16, max_steps=40, lr=3e-3, warmup_frac=0.05,
                        log_every=1, final_eval_n=0, seed=0)
    info = train(cfg, log=lambda s: None)
    assert info["step"] == 40
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "TRAINING.md", "train_log.csv"):
        assert (out / name).exists(), name
    rows = list(csv.DictReader((out / "train_log.csv").open()))
    losses = [float(r["loss"]) for r in rows]
    assert len(losses) == 40
    assert sum(losses[-10:]) / 10 < sum(losses[:5]) / 5 - 0.3

    model = load_model(out)
    assert model.config.d_model == 32 and model.config.n_layers == 2
    assert model.special.mask == model.tokenizer.mask_token_id
    assert model.special.eos == model.special.pad == model.tokenizer.eos_token_id
    cfg_json = json.loads((out / "config.json").read_text())
    assert cfg_json["mask_token_id"] == model.tokenizer.mask_token_id
    assert cfg_json["tspd_task"]["fingerprint"] == arith.fingerprint()
    assert model.tokenizer.decode(model.tokenizer("#### 12\n")["input_ids"]) == "#### 12\n"
    b = make_batch(model.tokenizer, arith.load_split("test", 2), 128, 32)
    with torch.no_grad():
        logits = model(b.input_ids, attention_mask=b.attention_mask, position_ids=b.position_ids)
    assert logits.shape == (2, b.input_ids.shape[1], model.config.vocab_size)
    assert torch.isfinite(logits).all()
    text = (out / "TRAINING.md").read_text()
    assert "python -m tspd train-lm" in text and "--max-steps 40" in text and "parameters: " in text


def test_evaluate_scores_through_generate(tmp_path):
    """The evaluation path (tspd.generate) runs on a tiny model and returns a well-formed record."""
    from tspd.training.lm.evaluation import sweep_row
    out = tmp_path / "tiny"
    train(LMTrainConfig(out=str(out), **TINY, batch_size=4, max_steps=2, final_eval_n=0), log=lambda s: None)
    model = load_model(out)
    r = sweep_row(model, arith.load_split("test", 2), gen_length=128, block_length=32, steps=4)
    assert r["n"] == 2 and 0 <= r["correct"] <= 2 and r["nfe"] == 4


def test_stratified_times_fill_every_slice():
    g = torch.Generator().manual_seed(0)
    t = stratified_uniform(16, "cpu", g)
    assert t.shape == (16, 1) and ((t >= 0) & (t < 1)).all()
    assert sorted((t.squeeze(1) * 16).floor().long().tolist()) == list(range(16))   # one draw per slice
    assert not torch.equal(t.squeeze(1).argsort(), torch.arange(16))                  # in a random order


def test_wilson_interval():
    lo, hi = wilson(95, 100)
    assert 0.88 < lo < 0.95 < hi < 0.98
    assert wilson(0, 50)[0] == 0.0 and 0 < wilson(0, 50)[1] < 0.1
    assert wilson(50, 50)[1] == pytest.approx(1.0) and wilson(50, 50)[0] > 0.9
    assert wilson(500, 500)[1] == 1.0 and wilson(0, 500)[0] == 0.0   # exact: a bar's end is never past its point


def test_resume_continues_the_same_run(tmp_path):
    """6 steps, then --resume to 10, gives the same weights as 10 steps in one go (constant lr)."""
    common = dict(**TINY, batch_size=4, lr=3e-3, warmup_frac=1e-9, min_lr_frac=1.0, final_eval_n=0, seed=1,
                  log_every=1)
    train(LMTrainConfig(out=str(tmp_path / "once"), max_steps=10, **common), log=lambda s: None)
    train(LMTrainConfig(out=str(tmp_path / "twice"), max_steps=6, **common), log=lambda s: None)
    assert (tmp_path / "twice" / STATE).is_file()
    info = train(LMTrainConfig(out=str(tmp_path / "twice"), max_steps=10, resume=True, **common), log=lambda s: None)
    assert info["step"] == 10 and info["resumes"] == 1 and ", resumed at " in info["git"]
    a = torch.load(tmp_path / "once" / STATE, weights_only=False)["model"]
    b = torch.load(tmp_path / "twice" / STATE, weights_only=False)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    rows = list(csv.DictReader((tmp_path / "twice" / "train_log.csv").open()))
    assert [int(r["step"]) for r in rows][-1] == 10 and len({r["step"] for r in rows}) == len(rows)
    with pytest.raises(ValueError, match="no train_state"):
        train(LMTrainConfig(out=str(tmp_path / "none"), max_steps=2, resume=True, **common), log=lambda s: None)


def test_learning_curve_is_recorded(tmp_path):
    out = tmp_path / "curve"
    info = train(LMTrainConfig(out=str(out), **TINY, batch_size=4, max_steps=4, eval_every=2, eval_n=2,
                               final_eval_n=0), log=lambda s: None)
    assert [c["step"] for c in info["curve"]] == [2, 4]
    rows = list(csv.DictReader((out / "eval_log.csv").open()))
    assert [int(r["step"]) for r in rows] == [2, 4] and all(r["n"] == "2" for r in rows)
    assert "## Learning curve" in (out / "TRAINING.md").read_text()
    # the probes are logged beside the accuracy at every evaluation
    from tspd.training import probes
    assert set(probes.COLUMNS) <= set(rows[0]) and all(0 <= float(r["probe_operand_question"]) <= 1 for r in rows)
    assert "question numbers" in (out / "TRAINING.md").read_text() and "next_result_add" in rows[0]


def test_a_try_that_cannot_copy_question_numbers_stops_at_the_gate(tmp_path):
    from tspd.training.lm.evaluation import gate_failed
    cfg = LMTrainConfig(out="", gate_minutes=20, gate_copy=0.5)
    assert gate_failed(cfg, {"minutes": 10, "probe_operand_question": 0.1}) is None       # too early to judge
    assert gate_failed(cfg, {"minutes": 20, "probe_operand_question": 0.6}) is None       # learned
    assert "copies 10% of question numbers" in gate_failed(cfg, {"minutes": 21, "probe_operand_question": 0.1})
    assert gate_failed(LMTrainConfig(out=""), {"minutes": 99, "probe_operand_question": 0.0}) is None  # no gate
    out = tmp_path / "gated"
    info = train(LMTrainConfig(out=str(out), **TINY, batch_size=4, max_steps=50, eval_every=2, eval_n=2,
                               final_eval_n=0, gate_minutes=1e-9, gate_copy=1.01), log=lambda s: None)
    assert info["step"] == 2 and "Stopped early" in (out / "TRAINING.md").read_text()


def test_structured_masking_scores_only_what_it_says(tokenizer):
    from tspd.training.masking import Masking, mask_answer
    b = make_batch(tokenizer, arith.load_split("test", 8), gen_length=64, prompt_multiple=8)
    model, P, masking = _Recorder(len(tokenizer)), b.prompt_width, Masking("block", 1.0, 32)
    loss = sft_loss(model, b, tokenizer.mask_token_id, generator=torch.Generator().manual_seed(0), masking=masking,
                    eos_id=tokenizer.eos_token_id)
    g = torch.Generator().manual_seed(0)                  # replay: t per row, then the scheme's draws
    t = 1e-3 + (1 - 1e-3) * stratified_uniform(8, "cpu", g)
    masked, scored, ratio = mask_answer(b.input_ids[:, P:], t, tokenizer.eos_token_id, masking, g)
    assert torch.equal(ratio, t)
    assert torch.equal(model.seen[:, P:] == tokenizer.mask_token_id, masked)
    assert (masked & ~scored).any()                       # later blocks are masked but not scored
    expected = (scored.sum(-1) / t[:, 0] * math.log(len(tokenizer)) / 64).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_an_interrupted_sweep_resumes_on_the_same_checkpoint(tmp_path):
    from tspd.training.lm.evaluation import SWEEP, final_evaluation
    out = tmp_path / "sweep"
    cfg = LMTrainConfig(out=str(out), **TINY, batch_size=4, max_steps=2, final_eval_n=0)
    train(cfg, log=lambda s: None)
    cfg = dataclasses.replace(cfg, final_eval_n=2)
    logged = []
    first = final_evaluation(out, cfg, logged.append)
    assert len(first) == len(SWEEP) and len(logged) == len(SWEEP) and all("lines" in r for r in first)
    assert all(sum(n for _, n in r["templates"].values()) == 2 for r in first)
    rows = json.loads((out / "evals.json").read_text())
    (out / "evals.json").write_text(json.dumps(rows[:3]))              # as if it was killed after 3 rows
    logged.clear()
    again = final_evaluation(out, cfg, logged.append)
    same = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]   # noqa: E731
    assert same(again) == same(first) and again[:3] == first[:3] and len(logged) == len(SWEEP) - 3
    train(dataclasses.replace(cfg, seed=1, final_eval_n=0), log=lambda s: None)   # new weights, same directory
    logged.clear()
    final_evaluation(out, cfg, logged.append)
    assert len(logged) == len(SWEEP)                                  # nothing reused from other weights


def test_a_resumed_run_upgrades_an_older_eval_log(tmp_path):
    from tspd.training.lm.evaluation import EVAL_COLUMNS
    from tspd.records.files import read_log
    from tspd.training.lm.outputs import upgrade_eval_log
    path = tmp_path / "eval_log.csv"
    path.write_text("step,minutes,loss,accuracy,n,probe_final\n10,1.0,0.5,0.25,200,0.5\n")
    upgrade_eval_log(path)
    assert path.read_text().splitlines()[0] == ",".join(EVAL_COLUMNS)
    row, = read_log(path)
    assert (row["step"], row["accuracy"], row["probe_final"], row["next_final"]) == (10, 0.25, 0.5, None)


def test_a_partial_alteration_reaches_the_batch_as_its_learned_tokens(tokenizer):
    import random
    problems, rng = arith.load_split("test", 60), random.Random(0)
    a = next(x for x in (arith.altered(p, rng, partial=True) for p in problems) if x and "scored_chars" in x)
    b = make_batch(tokenizer, [a, arith.load_split("test", 1)[0]], gen_length=64)
    n = len(tokenizer(a["answer"][:a["scored_chars"]], add_special_tokens=False)["input_ids"])
    assert b.until[:, 0].tolist() == [n, 0] and b.clean[0, 0] < n
    cfg = LMTrainConfig(out="", batch_size=16, alter_frac=1.0, alter_any=1.0, gen_length=64)
    from tspd.training.lm.stream import BatchStream
    stream = BatchStream(tokenizer, cfg)
    try:
        assert int((next(stream).until > 0).sum()) > 0
    finally:
        stream.close()


def test_altered_problems_keep_their_first_line_clean(tokenizer):
    import random
    p = arith.load_split("test", 2)
    a = arith.altered(p[0], random.Random(0))
    b = make_batch(tokenizer, [a, p[1]], gen_length=64, prompt_multiple=8)
    n = len(tokenizer(a["answer"][:a["clean_chars"]], add_special_tokens=False)["input_ids"])
    assert b.clean[:, 0].tolist() == [n, 0]
    assert make_batch(tokenizer, p, gen_length=64).clean is None       # no altered problem: no clean prefix
    cfg = LMTrainConfig(out="", batch_size=8, alter_frac=0.5, gen_length=64)
    from tspd.training.lm.stream import BatchStream
    first, again = BatchStream(tokenizer, cfg), BatchStream(tokenizer, cfg)
    try:
        x, y = next(first), next(again)
        assert torch.equal(x.input_ids, y.input_ids) and torch.equal(x.clean, y.clean)   # seeded: a resume agrees
        assert 0 < int((x.clean > 0).sum()) < 8
    finally:
        first.close(), again.close()


def test_swapped_operands_are_seeded_by_the_batch(tokenizer):
    from tspd.training.lm.stream import BatchStream
    plain, swap = (LMTrainConfig(out="", batch_size=8, swap_frac=f, gen_length=64) for f in (0.0, 1.0))
    streams = BatchStream(tokenizer, plain), BatchStream(tokenizer, swap), BatchStream(tokenizer, swap)
    try:
        x, y, z = (next(s) for s in streams)
        assert torch.equal(y.input_ids, z.input_ids)            # seeded: a resume draws the same orders
        assert not torch.equal(x.input_ids, y.input_ids)        # some operands written the other way round
        assert torch.equal((x.input_ids != tokenizer.eos_token_id).sum(), (y.input_ids != tokenizer.eos_token_id).sum())
    finally:
        for s in streams:
            s.close()


def test_the_window_defaults_to_the_task_and_long_windows_parse():
    from tspd.training.lm.config import windows
    assert (LMTrainConfig(out="").gen_length, LMTrainConfig(out="", task="chain").gen_length) == (64, 256)
    assert LMTrainConfig(out="", task="chain", gen_length=128).gen_length == 128
    cfg = LMTrainConfig(out="", task="chain", long_windows="512:0.1, 1024:0.05")
    assert windows(cfg) == [(512, 0.1), (1024, 0.05)]
    for bad, says in (("512", "not WINDOW:SHARE"), ("200:0.1", "above 256"), ("512:1.5", "share"),
                      ("512:0.6,1024:0.5", "must leave")):
        with pytest.raises(ValueError, match=says):
            LMTrainConfig(out="", task="chain", long_windows=bad)
    with pytest.raises(ValueError, match="unknown generated task"):
        LMTrainConfig(out="", task="gsm9k")


def test_long_window_batches_are_seeded_and_hold_fewer_problems(tokenizer):
    from tspd.training.lm.stream import BatchStream
    cfg = LMTrainConfig(out="", batch_size=8, gen_length=64, long_windows="128:0.3,256:0.2")
    a, b = BatchStream(tokenizer, cfg), BatchStream(tokenizer, cfg, skip_batches=5)
    try:
        first = [next(a) for _ in range(30)]
        later = [next(b) for _ in range(25)]
        widths = [x.input_ids.shape[1] - x.prompt_width for x in first]
        assert set(widths) == {64, 128, 256}
        assert all(x.input_ids.shape[0] == 8 * 64 // w for x, w in zip(first, widths))
        assert all(torch.equal(x.input_ids, y.input_ids) for x, y in zip(first[5:], later))   # a resume sees the same
        eos = tokenizer.eos_token_id
        assert all((x.input_ids[:, -1] == eos).all() for x in first)        # answers EOS-filled to the window
    finally:
        a.close(), b.close()


def test_mix_tasks_parse_and_refuse_what_cannot_mix():
    from tspd.training.lm.config import mixes
    assert mixes(LMTrainConfig(out="", task="chain", mix_tasks="arith:0.3")) == [("arith", 0.3)]
    for bad, says in (("arith", "not TASK:SHARE"), ("chain:0.2", "other than"), ("gsm9k:0.2", "known"),
                      ("arith:1.0", "share")):
        with pytest.raises(ValueError, match=says):
            LMTrainConfig(out="", task="chain", mix_tasks=bad)


def test_mixed_batches_take_their_task_and_window_and_resume_alike(tokenizer):
    from tspd.tasks import chain
    from tspd.training.lm.stream import BatchStream
    cfg = LMTrainConfig(out="", task="chain", batch_size=4, gen_length=256, mix_tasks="arith:0.4")
    a, b = BatchStream(tokenizer, cfg), BatchStream(tokenizer, cfg, skip_batches=7)
    try:
        first = [next(a) for _ in range(30)]
        later = [next(b) for _ in range(23)]
        widths = [x.input_ids.shape[1] - x.prompt_width for x in first]
        assert set(widths) == {arith.GEN_LENGTH, chain.GEN_LENGTH}
        assert 0.2 < widths.count(arith.GEN_LENGTH) / len(widths) < 0.6
        text = tokenizer.decode(next(x for x, w in zip(first, widths) if w == arith.GEN_LENGTH).input_ids[0])
        assert "*" in text or "+" in text or "-" in text or "/" in text
        assert all(torch.equal(x.input_ids, y.input_ids) for x, y in zip(first[7:], later))   # both streams resume
    finally:
        a.close(), b.close()


def test_chain_training_refuses_arith_only_options(tmp_path):
    with pytest.raises(ValueError, match="chain task has no reordered"):
        train(LMTrainConfig(out=str(tmp_path / "x"), task="chain", swap_frac=0.3, max_steps=1), log=lambda s: None)


@pytest.mark.slow   # a training run with its regime figures, end to end
def test_a_chain_run_records_its_task_and_regime_figures(tmp_path):
    out = tmp_path / "chain"
    info = train(LMTrainConfig(out=str(out), task="chain", **TINY, batch_size=2, max_steps=2, eval_every=2,
                               eval_n=2, regime=True, regime_long_n=1, final_eval_n=0, eval_batch=2,
                               gen_length=192, block_length=32), log=lambda s: None)
    from tspd.tasks import chain
    cfg_json = json.loads((out / "config.json").read_text())
    assert cfg_json["tspd_task"]["name"] == "tspd.tasks.chain"
    assert cfg_json["tspd_task"]["fingerprint"] == chain.fingerprint() and cfg_json["tspd_task"]["gen_length"] == 192
    point = info["curve"][0]
    assert point["regime"]["vanilla_384"]["n"] == 1 and point["regime"]["fast"]["n"] == 2
    rows = list(csv.DictReader((out / "eval_log.csv").open()))
    assert "fast_tpf" in rows[0] and rows[0]["fast_dual_cost"] != "" and rows[0]["vanilla_dual_cost"] == ""
    assert "## Regime figures during training" in (out / "TRAINING.md").read_text()


def test_a_run_saved_on_another_device_resumes_with_its_noise_reseeded(tmp_path):
    """A CUDA generator's state (16 bytes) does not fit the CPU's: the resume says so and goes on."""
    common = dict(**TINY, batch_size=4, final_eval_n=0, seed=1)
    train(LMTrainConfig(out=str(tmp_path / "run"), max_steps=2, **common), log=lambda s: None)
    state = torch.load(tmp_path / "run" / STATE, weights_only=False)
    state["gen"] = torch.zeros(16, dtype=torch.uint8)             # what torch.cuda's generator saves
    torch.save(state, tmp_path / "run" / STATE)
    said = []
    info = train(LMTrainConfig(out=str(tmp_path / "run"), max_steps=3, resume=True, **common), log=said.append)
    assert info["step"] == 3 and any("reseeded at step 2" in s for s in said)


def test_training_refuses_a_negative_worker_count_and_a_gpu_torch_cannot_see():
    with pytest.raises(ValueError, match="--data-workers must be >= 0"):
        LMTrainConfig(out="", data_workers=-1)
    with pytest.raises(ValueError, match="--batch-size must be positive"):
        LMTrainConfig(out="", batch_size=0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no CUDA GPU"):
            LMTrainConfig(out="", device="cuda")
