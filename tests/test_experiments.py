"""The run registry (tspd.eval.experiments): stable keys, reuse of stored results, resume after a crash.

A fake task (prompts are id lists) and the tiny random model of conftest (with a tokenizer that
prints ids) stand in for real ones; ``generate`` and the evaluation harness run for real, in
milliseconds.
"""
from __future__ import annotations

import json

import pytest

from tspd.validate import UsageError
import torch

from tspd.eval import experiments
from tspd.decoding.loop import generate
from tspd.eval.experiments import RunConfig
from tspd.models.loading import DEFAULT_MODEL, checkpoint_task, decode_lengths

from conftest import TEST_MODEL, prompts, random_model


class FakeTokenizer:
    chat_template = None

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


class FakeTask:
    """The Task interface the harness uses: samples, prompt, postprocess, grade."""
    name = "fake"
    executes_code = False
    supports_chat = False   # prompts are token ids: no chat template

    def __init__(self, n: int = 8):
        self._samples = [{"id": f"fake/{i}", "ids": p} for i, p in enumerate(prompts(n, seed=3))]

    def samples(self, limit=None):
        return list(self._samples if limit is None else self._samples[:limit])

    def prompt(self, sample, tokenizer=None, chat=None):
        return sample["ids"]

    def postprocess(self, text, chat=False):
        return text

    def grade(self, sample, completion):
        return {"correct": len(completion.split()) % 2 == 0, "reason": None}


@pytest.fixture
def registry(tmp_path):
    """Fake task + tiny model handed to the harness; counts loads and the samples through ``generate``."""
    calls = {"samples": 0, "loads": 0}
    loaded = {}

    def counting_generate(model, batch, config=None, **kw):
        calls["samples"] += len(batch)
        return generate(model, batch, config, **kw)

    def fake_load(checkpoint, device="cpu", dtype=None):     # cached per process, like tspd.models.loaded.get_model
        if checkpoint.path not in loaded:
            calls["loads"] += 1
            loaded[checkpoint.path] = random_model()
            loaded[checkpoint.path].tokenizer = FakeTokenizer()
        return loaded[checkpoint.path]

    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # a 32-wide model: with 2 threads on a busy machine each op waits ~40 ms
    yield calls, tmp_path, {"seam": (fake_load, counting_generate), "task": FakeTask()}
    torch.set_num_threads(threads)


def config(**over) -> RunConfig:
    """A run of the fake task; its checkpoint is the embedded model's (opened, never loaded: the seam's model)."""
    base = dict(model=TEST_MODEL, task="fake", controller="fast-dllm", controller_kwargs={"threshold": 0.7},
                gen_length=16, block_length=8, limit=4)
    base.update(over)
    return RunConfig(**base)


def test_key_is_stable_and_canonical():
    # a golden value: changing it silently would orphan every stored result
    assert RunConfig(model=TEST_MODEL, task="arith", gen_length=128, block_length=32).key == "41cb76cfc36f"
    own = decode_lengths(TEST_MODEL)   # the defaults follow the shipped checkpoint, whatever it is
    assert (RunConfig(model=TEST_MODEL).gen_length, RunConfig(model=TEST_MODEL).block_length) == own
    assert RunConfig(model=TEST_MODEL).key == RunConfig(model=TEST_MODEL, gen_length=own[0], block_length=own[1]).key
    c = config()
    assert len(c.key) == 12 and c.key == config().key
    same = [config(steps=16), config(limit=100), config(limit=None), config(dtype="float32"),
            config(controller_kwargs={"threshold": 0.7}), config(model=f"{TEST_MODEL}/")]
    assert {s.key for s in same} == {c.key}
    different = [config(controller="vanilla", controller_kwargs={}), config(controller_kwargs={"threshold": 0.8}), config(ce=True),
                 config(ce=True, ce_kwargs={"tau": 0.5}), config(cache="dual"), config(gen_length=32),
                 config(seed=1), config(device="cuda"), config(batch_size=2), config(model="other")]
    keys = {d.key for d in different}
    assert len(keys) == len(different) and c.key not in keys
    assert config(ce=True, ce_kwargs={"H": 10, "tau": 0.5}).key == config(ce=True, ce_kwargs={"tau": 0.5, "H": 10}).key
    assert RunConfig.from_dict(c.to_dict()) == c and hash(RunConfig.from_dict(c.to_dict())) == hash(c)
    assert RunConfig(model=TEST_MODEL, device="cuda").dtype == "bfloat16"
    assert RunConfig(model=TEST_MODEL).dtype == "float32"
    with pytest.raises(dataclasses_frozen_error()):
        c.controller = "vanilla"
    with pytest.raises(ValueError):
        config(cache="full")
    with pytest.raises(UsageError, match="with CE off"):   # CE settings with CE off: refused, not dropped
        config(ce=False, ce_kwargs={"tau": 0.5})
    with pytest.raises(TypeError):
        config(controller="tspd", controller_kwargs={"weights": object()})
    with pytest.raises(ValueError, match="takes no threshold"):    # settings are checked once, here
        config(controller="vanilla")


def test_the_task_defaults_to_the_one_the_model_was_trained_on():
    """A run names its task, or decodes the one its checkpoint's config.json names (the same key as naming it);
    a checkpoint that names none, or is not on this machine, runs the book model's task."""
    assert RunConfig(model=TEST_MODEL).task == checkpoint_task(TEST_MODEL) == "arith"
    assert RunConfig(model=TEST_MODEL).key == RunConfig(model=TEST_MODEL, task="arith").key
    assert RunConfig(model=TEST_MODEL, task="gsm8k").task == "gsm8k"
    elsewhere = RunConfig(model="/not/here/LLaDA-8B-Instruct", gen_length=256, block_length=32)
    assert elsewhere.task == checkpoint_task(DEFAULT_MODEL)


def dataclasses_frozen_error():
    import dataclasses
    return dataclasses.FrozenInstanceError


def test_second_call_computes_nothing(registry):
    calls, tmp, fake = registry
    first = experiments.result(config(), results_dir=tmp, progress=False, **fake)
    assert (first.computed, first.reused) == (4, 0)
    assert calls["samples"] == 4
    assert [r["id"] for r in first.samples] == [f"fake/{i}" for i in range(4)]
    for r in first.samples:
        assert {"id", "correct", "output", "nfe", "seconds", "gen_tokens"} <= set(r)
    s = first.summary
    assert set(s) >= {"accuracy", "n", "nfe_mean", "tps", "tps_nonpad"} and s["n"] == 4
    steady = [r for r in first.samples if not r["warmup"]]      # the harness leaves the warm-up batch out
    assert s["tps"] == pytest.approx(len(steady) * 16 / sum(r["batch_seconds"] for r in steady), rel=1e-3)
    assert s["accuracy"] == pytest.approx(100.0 * sum(r["correct"] for r in first.samples) / 4)

    calls["samples"] = 0
    again = experiments.result(config(), results_dir=tmp, progress=False, **fake)
    assert (again.computed, again.reused, calls["samples"]) == (0, 4, 0)
    assert again.samples == first.samples and again.summary == first.summary
    assert calls["loads"] == 1

    fewer = experiments.result(config(limit=2), results_dir=tmp, progress=False, **fake)   # a prefix: same file
    assert (fewer.computed, calls["samples"]) == (0, 0) and fewer.samples == first.samples[:2]

    meta = json.loads((tmp / f"{first.key}.json").read_text())
    assert meta["config"]["policy"] == "fast-dllm" and meta["devices"] and meta["key"] == first.key
    harness = json.loads((tmp / f"{first.key}.summary.json").read_text())
    assert harness["n"] == 4 and harness["accuracy"] == pytest.approx(s["accuracy"] / 100)
    assert experiments.load_result(config(), tmp, task=fake["task"]).samples == first.samples
    assert experiments.load_result(config(limit=8), tmp, task=fake["task"]) is None


def test_resume_after_partial_file(registry):
    calls, tmp, fake = registry
    experiments.result(config(limit=3), results_dir=tmp, progress=False, **fake)
    path = tmp / f"{config().key}.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:15])   # crash in the middle of row 3
    calls["samples"] = 0
    res = experiments.result(config(limit=6), results_dir=tmp, progress=False, **fake)
    assert res.computed == 4 and res.reused == 2 and calls["samples"] == 4
    stored = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["id"] for r in stored] == [f"fake/{i}" for i in range(6)]
    assert res.samples[:2] == stored[:2]


def test_a_packed_run_reads_the_same_and_resumes(registry):
    """ResultsFile.pack (the controller table's finished runs): the rows gzipped in place of the plain file, the
    same bytes each time; the registry reads it back alike, and a longer run unpacks it, decoding only the rest."""
    from tspd.records.rows import ResultsFile
    calls, tmp, fake = registry
    stored = experiments.result(config(limit=2), results_dir=tmp, progress=False, **fake).samples
    results = ResultsFile(tmp / f"{config().key}.jsonl")
    first = results.pack().read_bytes()
    assert not results.path.exists() and results.unpack() and results.pack().read_bytes() == first   # no timestamp
    assert experiments.load_result(config(limit=2), results_dir=tmp, task=fake["task"]).samples == stored
    calls["samples"] = 0
    res = experiments.result(config(limit=3), results_dir=tmp, progress=False, **fake)
    assert (res.reused, calls["samples"]) == (2, 1) and not results.packed.exists() and len(results.load()) == 3


def test_batches_match_single_samples_and_force_recomputes(registry):
    calls, tmp, fake = registry
    one = experiments.result(config(), results_dir=tmp, progress=False, **fake)
    two = experiments.result(config(batch_size=2), results_dir=tmp, progress=False, **fake)
    assert one.key != two.key and two.computed == 4
    assert [r["nfe"] for r in two.samples] and all(r["gen_tokens"] <= 16 for r in two.samples)
    calls["samples"] = 0
    again = experiments.result(config(), results_dir=tmp, progress=False, force=True, **fake)
    assert again.computed == 4 and calls["samples"] == 4
    assert [r["output"] for r in again.samples] == [r["output"] for r in one.samples]   # greedy: deterministic
    assert list(tmp.glob(f"{one.key}.stale-*.jsonl"))


def test_changed_checkpoint_is_recomputed(registry, monkeypatch):
    _, tmp, fake = registry
    monkeypatch.setattr(experiments, "model_fingerprint", lambda model: "aaaa")
    experiments.result(config(), results_dir=tmp, progress=False, **fake)
    assert experiments.result(config(), results_dir=tmp, progress=False, **fake).computed == 0
    monkeypatch.setattr(experiments, "model_fingerprint", lambda model: "bbbb")
    with pytest.warns(UserWarning, match="changed"):
        res = experiments.result(config(), results_dir=tmp, progress=False, **fake)
    assert res.computed == 4


def test_result_row_for_side_by_side(registry):
    from tspd.book import reported
    _, tmp, fake = registry
    res = experiments.result(config(), results_dir=tmp, progress=False, **fake)
    row = res.row(method="Fast-dLLM")
    assert row["method"] == "Fast-dLLM" and row["setting"]["cache"] == "none" and row["tps"] > 0
    table = reported.side_by_side(reported.paper_table("table13"), [row], keys=["method"], ours=res.label)
    assert table[4]["ours: TPS"] == row["tps"] and table[4]["paper: TPS"] == 52.8
    assert res.label.startswith(f"ours ({TEST_MODEL}, ") and res.label.endswith("n=4)")


def job_of_command(command: str):
    """The job ``python -m tspd eval`` would run for a command line (parsed, never executed)."""
    import argparse
    import shlex
    from tspd.commands import eval as eval_command
    p = argparse.ArgumentParser()
    eval_command.add_arguments(p)
    argv = shlex.split(command)
    assert argv[:4] == ["python", "-m", "tspd", "eval"]
    return eval_command.job_from_args(p.parse_args(argv[4:]))


@pytest.mark.parametrize("changes", [dict(ce=True, ce_kwargs={}, cache="dual", limit=0),
                                     dict(ce=True, ce_kwargs={"tau": 0.5}, seed=3, temperature=0.5, batch_size=2),
                                     dict(controller="tspd", controller_kwargs={"weights": "a dir/tspd"}, fast=True)])
def test_eval_command_is_the_same_job_as_run(tmp_path, changes, monkeypatch):
    monkeypatch.setattr("tspd.decoding.config.controller_weights", lambda c, p: c)
    c = config(task="arith", **changes)
    cmd = experiments.eval_command(c, tmp_path)
    assert cmd.startswith(f"python -m tspd eval --task arith --model {TEST_MODEL} --controller ")
    assert cmd.endswith(f"--out {tmp_path / (c.key + '.jsonl')}")
    job = job_of_command(cmd)
    assert job.config == c and job.config.key == c.key and job.out == tmp_path / f"{c.key}.jsonl"
    assert job.row_config() == experiments.EvalJob(c, job.out).row_config()


def test_eval_command_spells_the_settings_as_options():
    cmd = experiments.eval_command(config(ce=True, ce_kwargs={}, cache="dual", device="cuda", limit=0))
    assert "--controller-arg threshold=0.7" in cmd and "--ce " in cmd and "--limit" not in cmd
    assert "--dtype bfloat16" in cmd and "--seed 0" in cmd


def test_replace_gen_length_brings_its_own_default_steps():
    c = experiments.RunConfig(model=TEST_MODEL, gen_length=128)
    assert c.replace(gen_length=256).steps == 256                   # default schedule follows the length
    assert c.replace(gen_length=256, steps=64).steps == 64
    assert experiments.RunConfig(model=TEST_MODEL, gen_length=128, steps=64).replace(gen_length=256).steps == 64


def test_rows_of_another_harness_configuration_are_set_aside(registry):
    _, tmp, fake = registry
    path = tmp / f"{config().key}.jsonl"
    path.write_text(json.dumps({"id": "fake/0", "correct": True, "config": "0123456789ab"}) + "\n")
    with pytest.warns(UserWarning, match="another configuration"):
        res = experiments.result(config(), results_dir=tmp, progress=False, **fake)
    assert res.computed == 4 and list(tmp.glob("*.stale-*.jsonl"))


def test_profile_times_the_computed_rows_only(registry):
    _, tmp, fake = registry
    plain = experiments.result(config(limit=2), results_dir=tmp, progress=False, **fake)
    assert "forward_seconds" not in plain.samples[0] and "forward_ms" not in plain.summary
    timed = experiments.result(config(limit=4), results_dir=tmp, progress=False, profile=True, **fake)
    assert timed.key == plain.key and (timed.computed, timed.reused) == (2, 2)   # not part of the key
    assert timed.samples[:2] == plain.samples and timed.samples[2]["forward_seconds"] > 0
    assert {"controller_seconds", "ce_seconds"} <= set(timed.samples[3])
    assert "forward_ms" not in timed.summary          # two rows untimed: no phase shares


def test_committed_rows_carry_the_config_id_of_their_job():
    """A golden check over every committed run: the typed job names its rows as the harness always has
    (a different id would make every stored run look foreign and be recomputed)."""
    from tspd.records.rows import ResultsFile, config_id
    from tspd.provenance import REPO_ROOT
    checked = 0
    for directory in (REPO_ROOT / "results" / "runs", REPO_ROOT / "results" / "controller_table"):
        for meta_path in sorted(directory.glob("*.json")):
            rows = meta_path.with_suffix(".jsonl")
            if meta_path.name.endswith(".summary.json") or not ResultsFile(rows).exists():
                continue
            meta = json.loads(meta_path.read_text())
            run = RunConfig.from_dict(meta["config"])
            first = ResultsFile(rows).load()[0]
            assert config_id(experiments.EvalJob(run, rows).row_config()) == first["config"], meta_path.name
            checked += 1
    assert checked >= 20


def test_a_notebook_job_reads_config_json_once(registry, monkeypatch):
    """The notebook path (base_run, method_config, the registry's key, fingerprint and evaluation) opens the
    checkpoint once: the RunConfig carries it whole, so nothing reads the model's config.json again."""
    from pathlib import Path

    from tspd import book
    calls, tmp, fake = registry
    reads = []
    for method in ("read_bytes", "read_text"):
        real = getattr(Path, method)

        def counted(self, *args, _real=real, **kwargs):
            if self.name == "config.json":
                reads.append(self)
            return _real(self, *args, **kwargs)
        monkeypatch.setattr(Path, method, counted)
    base = book.base_run({"model": TEST_MODEL, "limit": 2, "gen_length": 0, "block_length": 0}, task="fake")
    run = book.method_config(base, "F-dLLM")
    assert run.key and run.gen_length == decode_lengths(base.checkpoint)[0]
    res = experiments.result(run, results_dir=tmp, progress=False, **fake)
    assert res.computed == 2 and calls["loads"] == 1
    assert len(reads) == 1, reads
