"""Warm start (:mod:`tspd.training.warm_start`): a shallower model from chosen blocks of a checkpoint."""
from __future__ import annotations

import pytest
import torch

from tspd import load_model
from tspd.models.llada import LLaDAModelLM
from tspd.training.lm.config import LMTrainConfig
from tspd.training.lm.arch import model_config
from tspd.training.train_lm import train
from tspd.training.warm_start import block_state, parse_layers, warm_start

TINY = dict(d_model=32, n_heads=2, mlp_hidden=64, threads=1, batch_size=4, final_eval_n=0, log_every=1)


def test_parse_layers():
    assert parse_layers("0,3", 4, 2) == [0, 3] and parse_layers("3, 0", 4, 2) == [3, 0]
    assert parse_layers(None, 4, 2) == [0, 1]
    for text, match in (("0,1,2", "names 3 blocks"), ("0,4", "blocks 0..3"), ("a,b", "separated by commas")):
        with pytest.raises(ValueError, match=match):
            parse_layers(text, 4, 2)


def test_block_state_keeps_and_renumbers_the_chosen_blocks():
    state = {"wte": 0, "x.blocks.0.w": 10, "x.blocks.1.w": 11, "x.blocks.2.w": 12, "head": 1}
    assert block_state(state, [2, 0]) == {"wte": 0, "x.blocks.0.w": 12, "x.blocks.1.w": 10, "head": 1}
    assert block_state(state, [1, 1]) == {"wte": 0, "x.blocks.0.w": 11, "x.blocks.1.w": 11, "head": 1}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    out = tmp_path_factory.mktemp("src") / "four"
    train(LMTrainConfig(out=str(out), n_layers=4, max_steps=2, tokenizer="char", **TINY), log=lambda s: None)
    return out


def test_a_warm_start_copies_embeddings_head_and_the_chosen_blocks(source, tmp_path):
    out = tmp_path / "two"
    lines = []
    train(LMTrainConfig(out=str(out), n_layers=2, max_steps=1, lr=1e-9, warmup_frac=1e-9, min_lr_frac=1.0,
                        weight_decay=0.0, init_from=str(source), init_layers="3,1", **TINY), log=lines.append)
    assert any("blocks [3, 1]" in line for line in lines)
    src, new = load_model(source).module.state_dict(), load_model(out).module.state_dict()
    assert len(new) < len(src)
    blocks = {"model.transformer.blocks.0.": "model.transformer.blocks.3.",
              "model.transformer.blocks.1.": "model.transformer.blocks.1."}
    for name, value in new.items():   # lr 1e-9: one step leaves the copied weights as they were (bf16 files)
        old = next((name.replace(a, b) for a, b in blocks.items() if name.startswith(a)), name)
        assert torch.allclose(value, src[old], atol=1e-2), name
    assert (out / "tokenizer.json").read_text() == (source / "tokenizer.json").read_text()


def test_a_source_of_another_shape_is_refused_in_one_line(source, tmp_path):
    tok = load_model(source).tokenizer
    net = LLaDAModelLM(model_config(LMTrainConfig(out="x", d_model=16, n_heads=2, mlp_hidden=64, n_layers=2), tok))
    with pytest.raises(ValueError, match="d_model is 32, the new model's is 16"):
        warm_start(net, str(source), None, tok)
    with pytest.raises(ValueError, match="needs --init-from"):
        train(LMTrainConfig(out=str(tmp_path / "x"), n_layers=2, max_steps=1, init_layers="0,1", **TINY))
