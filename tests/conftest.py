"""Shared fixtures: tiny random LLaDA models built in memory (no files, no network)."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
import torch

from tspd import LLaDAConfig, LLaDAModelLM, LoadedModel, SpecialTokens
from tspd.tasks import data as task_data

# The benchmark data: ../shared/data (or $TSPD_DATA_DIR) when present, else the few rows of each
# benchmark vendored under tests/data, so the harness tests always run.
FIXTURE_DATA = Path(__file__).resolve().parent / "data"
# (a test process started by pytest-xdist inherits the variable its parent set: the fixture rows again)
FULL_DATA = task_data.default_data_dir().resolve() != FIXTURE_DATA.resolve() \
    and (task_data.default_data_dir() / "gsm8k" / "test.jsonl").is_file()
if not FULL_DATA:
    os.environ[task_data.ENV_VAR] = str(FIXTURE_DATA)
# test-split sizes of the full data and of the rows vendored in tests/data
FULL_SIZES = {"gsm8k": 1319, "math": 5000, "math500": 500, "humaneval": 164, "mbpp": 500, "arith": 500, "chain": 500, "roster": 500, "styled": 500, "leaning": 500, "trail": 500, "shell": 500, "leaning_shell": 500}
SIZES = FULL_SIZES if FULL_DATA else {"gsm8k": 40, "math": 6, "math500": 6, "humaneval": 6, "mbpp": 7, "arith": 500, "chain": 500, "roster": 500, "styled": 500, "leaning": 500, "trail": 500, "shell": 500, "leaning_shell": 500}

# Tiny models run fastest on one thread, and several test processes may share the cores.
torch.set_num_threads(1)

# The embedded model the tests decode with, named wherever a test decodes or asserts on a model: the fast one
# (a 64-token window), whatever the book's model (tspd.models.loading.DEFAULT_MODEL, every default) is.
TEST_MODEL = "tiny-arith"



def pytest_collection_modifyitems(config, items):
    """The executed notebooks (nbval) belong to the slow tier: ``pytest -m "not slow"`` skips them."""
    for item in items:
        if str(item.path).endswith(".ipynb"):
            item.add_marker(pytest.mark.slow)


VOCAB = 40
MASK, EOS = 39, 38   # the tiny config's own ids (written into its config like a real checkpoint)


def tiny_config(**over) -> LLaDAConfig:
    base = dict(d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, mlp_hidden_size=64, vocab_size=VOCAB,
                rope_theta=10000.0, max_sequence_length=256, mask_token_id=MASK, eos_token_id=EOS, pad_token_id=EOS)
    base.update(over)
    return LLaDAConfig(**base)


def random_model(seed: int = 0, scale: float = 0.5, **over) -> LoadedModel:
    """A random model whose logits are sharp enough that decoding makes varied, tie-free choices
    (a loaded model of no directory: no tokenizer, no controllers beside it)."""
    torch.manual_seed(seed)
    m = LLaDAModelLM(tiny_config(**over)).eval()
    for name, p in m.named_parameters():
        if "norm" in name or "ln_f" in name:
            p.data.uniform_(0.8, 1.2)
        else:
            p.data.normal_(0.0, scale)
    return LoadedModel(m, tokenizer=None, special=SpecialTokens(mask=MASK, eos=EOS, pad=EOS))


@pytest.fixture
def tiny_model() -> LoadedModel:
    return random_model()


def prompts(n: int, seed: int = 1, lo: int = 3, hi: int = 12) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, EOS, (int(torch.randint(lo, hi, (1,), generator=g)),), generator=g).tolist() for _ in range(n)]


class Spy:
    """Wraps a model and records every forward: offset, input ids, mask, positions and the logits."""

    def __init__(self, model):
        self.model, self.calls = model, []

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, ids, **kw):
        out = self.model(ids, **kw)
        self.calls.append(dict(offset=kw.get("offset", 0), ids=ids.clone(), attn=kw.get("attention_mask"),
                               pos=kw.get("position_ids"), logits=out.clone()))
        return out


def spied(model: LoadedModel) -> tuple[LoadedModel, Spy]:
    """``model`` with its network wrapped in a :class:`Spy` (the same ids, tokenizer and directory), and the spy."""
    spy = Spy(model.module)
    return dataclasses.replace(model, module=spy, graphs=None), spy


def seeded_net(kind: str, seed: int = 0, **arch):
    """A TSPD (``arch`` -> TSPDConfig) or Learn2PD network with seeded random weights."""
    from tspd.decoding.controllers.learn2pd import Learn2PDNet
    from tspd.decoding.controllers.tspd import TSPDConfig, TSPDNet
    torch.manual_seed(seed)
    return TSPDNet(TSPDConfig(**arch)) if kind == "tspd" else Learn2PDNet()


# ------------------------------------------------------------------------------------------------
# transformers' own classes as references for the Dream and LLaDA-MoE layouts (tests/test_backbones.py,
# tests/test_train_arch.py); the caller imports transformers and passes the class
# ------------------------------------------------------------------------------------------------
def hf_reference(cls, directory: Path, config):
    model, info = cls.from_pretrained(str(directory), config=config, attn_implementation="eager",
                                      output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    return model.eval().float()


@torch.no_grad()
def bidirectional(ref, ids: torch.Tensor) -> torch.Tensor:
    """Reference logits with a 4D additive mask of zeros: every query attends to every key."""
    B, T = ids.shape
    return ref(ids, attention_mask=torch.zeros(B, 1, T, T)).logits


def dream_shift(logits: torch.Tensor) -> torch.Tensor:
    """Dream's rule (DreamLM/Dream generation_utils.py): row i <- row i-1, row 0 keeps its own."""
    return torch.cat([logits[:, :1], logits[:, :-1]], dim=1)


def layout_reference(directory):
    """transformers' own class for the directory's layout, configured from its config.json alone, as a
    downloaded Dream-7B (Qwen2) or LLaDA-MoE (Qwen3-MoE's modules under OLMoE's names) would be."""
    transformers = pytest.importorskip("transformers")
    raw = json.loads((Path(directory) / "config.json").read_text())
    common = {k: raw[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                                  "vocab_size", "rope_theta", "rms_norm_eps", "tie_word_embeddings",
                                  "max_position_embeddings")}
    if raw["model_type"] == "Dream":
        config = transformers.Qwen2Config(intermediate_size=raw["intermediate_size"], **common)
        return hf_reference(transformers.Qwen2ForCausalLM, directory, config)
    if not hasattr(transformers, "Qwen3MoeForCausalLM"):
        pytest.skip("this transformers has no Qwen3MoeForCausalLM")
    assert raw["qk_layernorm"] and not raw["attention_bias"]    # Qwen3-MoE's attention: per-head q/k norms, no bias
    dense = [i for i, f in enumerate(raw["moe_layer_freq"]) if f == 0]      # [] (train-lm's): every layer sparse
    if dense:
        common["intermediate_size"] = raw["dense_intermediate_size"]
    config = transformers.Qwen3MoeConfig(
        head_dim=raw["hidden_size"] // raw["num_attention_heads"], num_experts=raw["num_experts"],
        num_experts_per_tok=raw["num_experts_per_tok"], moe_intermediate_size=raw["expert_intermediate_size"],
        decoder_sparse_step=1, mlp_only_layers=dense, norm_topk_prob=False, attention_bias=False, **common)
    return hf_reference(transformers.Qwen3MoeForCausalLM, directory, config)


def layout_logits(directory, ids: torch.Tensor) -> torch.Tensor:
    """The logits the loop's model of ``directory`` must give on ``ids``: its layout reference's, run
    bidirectionally, Dream's shifted by one position."""
    full = bidirectional(layout_reference(directory), ids)
    raw = json.loads((Path(directory) / "config.json").read_text())
    return dream_shift(full) if raw["model_type"] == "Dream" else full
