"""tspd.training.variants (trace subsets, mixtures, cached controller training) and tspd.book's pure helpers."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from tspd import book
from tspd.training import variants
from tspd.eval.experiments import RunConfig
from tspd.training.traces import COLLECT, collect
from tspd.training.train_controller import ControllerTrainConfig

from conftest import TEST_MODEL, prompts, random_model

GEN, BLOCK = 32, 8


@pytest.fixture(scope="module")
def sets():
    model = random_model(seed=7, scale=0.8)
    ps = prompts(6, seed=3)
    window = COLLECT.replace(gen_length=GEN, block_length=BLOCK)
    egp = collect(model, ps, window, batch_size=3, progress=False)
    van = collect(model, ps, window, batch_size=3, controller="vanilla", progress=False)
    return egp, van


def sequences(data: dict, prompt: int) -> list[torch.Tensor]:
    off = data["offsets"].tolist()
    return [data["features"][off[m]:off[m + 1]] for m, p in enumerate(data["prompt_index"].tolist()) if p == prompt]


def test_subset_keeps_exactly_the_chosen_prompts(sets):
    egp, _ = sets
    sub = variants.subset(egp, [1, 4])
    assert sorted(set(sub["prompt_index"].tolist())) == [1, 4]
    assert sub["offsets"][-1] == sub["features"].shape[0] == sub["labels"].shape[0] == sub["masked"].shape[0]
    for p in (1, 4):
        assert all(torch.equal(a, b) for a, b in zip(sequences(sub, p), sequences(egp, p)))
    with pytest.raises(ValueError):
        variants.subset(egp, [99])


def test_mix_takes_the_first_half_from_one_controller_and_the_rest_from_the_other(sets):
    egp, van = sets
    mixed = variants.mix(egp, van)
    assert sorted(set(mixed["prompt_index"].tolist())) == list(range(6))
    assert all(torch.equal(a, b) for a, b in zip(sequences(mixed, 0), sequences(egp, 0)))
    assert all(torch.equal(a, b) for a, b in zip(sequences(mixed, 5), sequences(van, 5)))
    assert mixed["offsets"][-1] == mixed["features"].shape[0]
    assert mixed["meta"]["policy"] == "mixed"


def test_stabilization_ratio_is_the_fix_safe_fraction_of_masked_steps(sets):
    egp, _ = sets
    r = variants.stabilization_ratio(egp)
    assert r.shape == (6,) and ((r >= 0) & (r <= 1)).all()
    one = variants.subset(egp, [2])
    assert torch.isclose(r[2], one["labels"][one["masked"]].float().mean())


def test_controller_is_trained_once_per_traces_and_config(sets, tmp_path):
    egp, van = sets
    cfg = ControllerTrainConfig(epochs=3, batch=8, patience=3)
    stem = variants.controller(egp, cfg, results_dir=tmp_path)
    stamp = stem.with_suffix(".safetensors").stat().st_mtime_ns
    assert variants.controller(egp, cfg, results_dir=tmp_path) == stem
    assert stem.with_suffix(".safetensors").stat().st_mtime_ns == stamp        # read back, not retrained
    assert variants.controller(van, cfg, results_dir=tmp_path) != stem         # other traces, other variant
    assert variants.controller(egp, ControllerTrainConfig(epochs=3, batch=8, patience=3, hidden=8), results_dir=tmp_path) != stem
    assert variants.summary(stem)["traces"] == variants.fingerprint(egp)
    assert len(variants.curve(stem)["val_loss"]) >= 1


def test_trace_spec_validates_and_keys_ignore_the_batch_size():
    with pytest.raises(ValueError):
        variants.TraceSpec(model=TEST_MODEL, controller="greedy")
    with pytest.raises(ValueError):
        variants.TraceSpec(model=TEST_MODEL, n=1)
    spec = variants.TraceSpec(model=TEST_MODEL)
    assert spec.key == dataclasses.replace(spec, batch_size=16).key == dataclasses.replace(spec, batch_size=4).key
    assert dataclasses.replace(spec, n=8).key != dataclasses.replace(spec, n=9).key


def test_trace_spec_prompts_default_to_the_models_own_traces_split():
    """Unset, the prompts are the traces split of the model's task, spelled out: the same spec (and key) as
    naming it, as the notebooks' parameter cells do."""
    own = variants.TraceSpec(model=TEST_MODEL)
    assert own.prompts == "arith-traces"
    assert own.key == variants.TraceSpec(model=TEST_MODEL, prompts="arith-traces").key


def test_pareto_front_keeps_the_undominated_points():
    pts = [(1.0, 50.0), (2.0, 40.0), (1.5, 30.0), (3.0, 40.0), (0.5, 60.0)]
    assert book.pareto_front(pts) == [4, 0, 3]          # (1.5, 30) and (2, 40) are dominated


def test_method_config_applies_the_papers_row_settings():
    base = RunConfig(model=TEST_MODEL, limit=4, controller="prophet", cache="prefix")
    ours = book.method_config(base, "Ours")
    assert (ours.controller, ours.ce, ours.cache, ours.limit) == ("tspd", True, "dual", 4)
    vanilla = book.method_config(base, "Vanilla")
    assert (vanilla.controller, vanilla.ce, vanilla.cache) == ("vanilla", False, "none")
    with pytest.raises(ValueError):
        book.method_config(base, "Nope")
    rows = book.paper_rows("table1", task="gsm8k")
    assert [r["method"] for r in rows].count("Ours †") == 1 and [r["method"] for r in rows].count("Ours") == 1


def test_trace_keys_follow_the_weights(tmp_path):
    """A retrained checkpoint under the same name must not read back the old model's traces."""
    import shutil

    from tspd.models.loading import resolve_path
    ckpt = tmp_path / "ckpt"
    shutil.copytree(resolve_path(TEST_MODEL), ckpt, ignore=shutil.ignore_patterns("controllers"))
    before = variants.TraceSpec(model=str(ckpt)).key
    weights = ckpt / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1                                   # one bit of one weight
    weights.write_bytes(bytes(data))
    assert variants.TraceSpec(model=str(ckpt)).key != before
