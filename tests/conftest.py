"""Shared fixtures: tiny random LLaDA models built in memory (no files, no network)."""
from __future__ import annotations

import pytest
import torch

from tspd import LLaDAConfig, LLaDAModelLM, SpecialTokens

# Tiny models run fastest on one thread, and several test processes may share the cores.
torch.set_num_threads(1)

VOCAB = 40
MASK, EOS = 39, 38   # the tiny config's own ids (written into its config like a real checkpoint)


def tiny_config(**over) -> LLaDAConfig:
    base = dict(d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, mlp_hidden_size=64, vocab_size=VOCAB,
                rope_theta=10000.0, max_sequence_length=256, mask_token_id=MASK, eos_token_id=EOS, pad_token_id=EOS)
    base.update(over)
    return LLaDAConfig(**base)


def random_model(seed: int = 0, scale: float = 0.5, **over) -> LLaDAModelLM:
    """A random model whose logits are sharp enough that decoding makes varied, tie-free choices."""
    torch.manual_seed(seed)
    m = LLaDAModelLM(tiny_config(**over)).eval()
    for name, p in m.named_parameters():
        if "norm" in name or "ln_f" in name:
            p.data.uniform_(0.8, 1.2)
        else:
            p.data.normal_(0.0, scale)
    m.special = SpecialTokens(mask=MASK, eos=EOS, pad=EOS)
    m.tokenizer = None
    m.name_or_path = "<random>"
    return m


@pytest.fixture
def tiny_model() -> LLaDAModelLM:
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


def seeded_net(kind: str, seed: int = 0, **arch):
    """A TSPD (``arch`` -> TSPDConfig) or Learn2PD network with seeded random weights."""
    from tspd.controllers.learn2pd import Learn2PDNet
    from tspd.controllers.tspd import TSPDConfig, TSPDNet
    torch.manual_seed(seed)
    return TSPDNet(TSPDConfig(**arch)) if kind == "tspd" else Learn2PDNet()
