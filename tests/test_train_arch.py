"""``train-lm --arch`` (tspd.training.lm.arch): Dream's and LLaDA-MoE's layouts trained by the same objective,
saved in their own checkpoint format and decoded through the same loading path as a downloaded model."""
from __future__ import annotations

import json

import pytest
import torch
from conftest import layout_logits

from tspd import generate, load_model
from tspd.tasks import arith
from tspd.models.dream import DreamModelLM
from tspd.models.llada_moe import LLaDAMoEModelLM
from tspd.models.loading import Checkpoint
from tspd.training.lm.arch import RouterBalance, build, model_config
from tspd.training.lm.config import LMTrainConfig
from tspd.training.train_lm import train
from tspd.training.warm_start import warm_start

TINY = dict(d_model=32, n_layers=2, n_heads=2, mlp_hidden=64, threads=1, batch_size=4, final_eval_n=0,
            tokenizer="char", log_every=1)


@pytest.fixture(scope="module", params=[("dream", DreamModelLM, "Dream"), ("llada-moe", LLaDAMoEModelLM, "lladamoe")],
                ids=["dream", "llada-moe"])
def trained(request, tmp_path_factory):
    arch, network, model_type = request.param
    out = tmp_path_factory.mktemp(arch) / "run"
    train(LMTrainConfig(out=str(out), arch=arch, max_steps=2, **TINY), log=lambda s: None)
    return out, network, model_type


def test_a_trained_checkpoint_is_its_layouts_own_directory(trained):
    out, network, model_type = trained
    raw = json.loads((out / "config.json").read_text())
    assert raw["model_type"] == model_type and "hidden_size" in raw and "d_model" not in raw
    assert raw["tspd_task"]["gen_length"] == arith.GEN_LENGTH        # the task travels with it, as for LLaDA
    ckpt = Checkpoint.open(str(out))
    assert ckpt.model_class is network
    model = load_model(str(out))
    assert type(model.module) is network and model.special.mask == raw["mask_token_id"]


def test_a_trained_checkpoint_gives_the_logits_of_its_layouts_reference(trained):
    """The saved tensors, names and config are those transformers' own classes read (every tensor used, none
    missing), and the loop's model computes their logits (Dream's shifted by one position)."""
    out, _, _ = trained
    model = load_model(str(out))
    problem = arith.load_split("test", 1)[0]
    ids = torch.tensor([model.tokenizer.encode(arith.prompt(problem)) + [model.special.mask] * 16])
    with torch.no_grad():
        ours = model(ids)
    torch.testing.assert_close(ours, layout_logits(out, ids), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("cache", ["none", "prefix", "dual"])
def test_a_trained_checkpoint_decodes_with_each_cache(trained, cache):
    out, _, _ = trained
    model = load_model(str(out))
    problem = arith.load_split("test", 1)[0]
    gen = generate(model, [arith.prompt(problem)], gen_length=64, block_length=32, cache=cache, controller="fast-dllm",
                   threshold=0.9)
    assert gen.token_ids.shape == (1, 64) and not bool((gen.token_ids == model.special.mask).any())


def test_the_router_balance_term_trains_the_router_and_ignores_evaluation():
    tok = load_model("tiny-arith").tokenizer
    net = build(LMTrainConfig(out="x", arch="llada-moe", **TINY), tok)
    balance = RouterBalance(net)
    assert len(balance.moes) == TINY["n_layers"]
    ids = torch.randint(0, len(tok), (2, 12))
    net.eval()
    net(ids)
    assert balance.take() == 0.0                  # evaluation forwards are not kept
    net.train()
    net(ids)
    term = balance.take()
    assert term >= 1.0 - 1e-4                     # E * sum f_e P_e is 1 at best (an even load)
    term.backward()
    assert all(m.gate.weight.grad is not None and m.gate.weight.grad.abs().sum() > 0 for m in balance.moes)
    assert balance.take() == 0.0
    plain = build(LMTrainConfig(out="x", **TINY), tok)
    assert RouterBalance(plain).moes == []


def test_the_moes_active_mlp_is_mlp_hidden_wide_and_bad_settings_are_one_line():
    tok = load_model("tiny-arith").tokenizer
    cfg = model_config(LMTrainConfig(out="x", arch="llada-moe", experts=4, active_experts=2, **TINY), tok)
    assert (cfg.num_experts, cfg.num_experts_per_tok, cfg.expert_intermediate_size) == (4, 2, TINY["mlp_hidden"] // 2)
    assert cfg.qk_layernorm                          # LLaDA-MoE-7B's per-head q/k RMSNorm
    with pytest.raises(ValueError, match="--arch gpt"):
        LMTrainConfig(out="x", arch="gpt")
    with pytest.raises(ValueError, match="--active-experts"):
        LMTrainConfig(out="x", arch="llada-moe", experts=2, active_experts=3)


def test_a_warm_start_from_another_layout_is_refused(trained):
    out, _, model_type = trained
    tok = load_model(str(out)).tokenizer
    net = build(LMTrainConfig(out="x", **TINY), tok)    # LLaDA's layout
    with pytest.raises(ValueError, match="checkpoint, the new model is llada"):
        warm_start(net, str(out), None, tok)


def test_dreams_autoregressive_start_then_its_diffusion_training(tmp_path):
    """--objective ar trains Dream as a next-token model (causal mask, shifted logits); a diffusion run then
    warm-starts from it (Dream's own recipe)."""
    ar, lines = tmp_path / "ar", []
    train(LMTrainConfig(out=str(ar), arch="dream", objective="ar", max_steps=2, **TINY), log=lambda s: None)
    train(LMTrainConfig(out=str(tmp_path / "diffusion"), arch="dream", max_steps=1, init_from=str(ar), **TINY),
          log=lines.append)
    assert any(f"warm start from {ar}" in line for line in lines)
    assert "Autoregressive start of an embedded masked diffusion LM" in (ar / "TRAINING.md").read_text()
    assert "Embedded masked diffusion LM (Dream's layout" in (tmp_path / "diffusion" / "TRAINING.md").read_text()
    with pytest.raises(ValueError, match="--objective ar"):
        LMTrainConfig(out="x", objective="ar")            # LLaDA's logits are not shifted


def test_a_causal_mask_makes_each_dream_row_read_only_the_tokens_before_it():
    from tspd.training.lm.data import Batch
    from tspd.training.lm.objective import ar_loss
    tok = load_model("tiny-arith").tokenizer
    net = build(LMTrainConfig(out="x", arch="dream", **TINY), tok).eval()
    ids = torch.randint(0, len(tok), (1, 10))
    causal = torch.ones(10, 10, dtype=torch.bool).tril()[None, None]
    rows = net(ids, attention_mask=causal)
    later = ids.clone()
    later[0, 6:] = (later[0, 6:] + 1) % len(tok)
    moved = (net(later, attention_mask=causal) - rows).abs().amax(-1)[0]
    assert bool((moved[:7] < 1e-5).all()) and bool((moved[7:] > 0).all())   # row j sees tokens < j only
    batch = Batch(ids, torch.ones_like(ids), torch.arange(10)[None], 4)
    expected = torch.nn.functional.cross_entropy(rows[0, 4:], ids[0, 4:])
    assert ar_loss(net, batch).item() == pytest.approx(expected.item(), rel=1e-5)


def test_the_training_record_names_the_layout_and_the_objective(trained):
    out, _, model_type = trained
    text = (out / "TRAINING.md").read_text()
    assert ("Dream's layout" in text) == (model_type == "Dream") and ("LLaDA-MoE's layout" in text) != (model_type == "Dream")
    assert "the LLaDA SFT objective" in text
