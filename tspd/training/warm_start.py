"""Warm start: a new network initialised from some of the blocks of a trained checkpoint of its layout
(LLaDA's ``blocks``, or Dream's and LLaDA-MoE's ``layers``).

Why: a shallower model than the shipped one (fewer blocks) cannot solve a several-step problem in one
forward pass, so committing many tokens per step (Sec. 1, the speed-accuracy trade-off the controllers
act on) costs it accuracy, while it can still compute one line from the operands written before it.
Keeping the trained embeddings, head and a subset of the blocks saves relearning the task's text.

``init_layers`` names the source blocks in their new order (``[0, 3]``: block 0, then block 3); the
residual stream of a pre-norm transformer lets any subset run, and training repairs the rest.
"""
from __future__ import annotations

import re

import torch

from tspd.models.loading import load_model

_BLOCK = re.compile(r"^(.*\.(?:blocks|layers)\.)(\d+)(\..*)$")
_SHAPE = ("d_model", "n_heads", "vocab_size")   # must agree for the weights to fit (and every tensor's shape)


def parse_layers(text: str | None, source_layers: int, target_layers: int) -> list[int]:
    """``"0,3"`` -> ``[0, 3]``; None -> the source's first ``target_layers`` blocks. One per target block."""
    if text is None:
        layers = list(range(target_layers))
    else:
        try:
            layers = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"--init-layers {text!r}: give block indices separated by commas, e.g. 0,3") from None
    if len(layers) != target_layers:
        raise ValueError(f"--init-layers names {len(layers)} blocks; the new model has --n-layers {target_layers}")
    bad = [i for i in layers if not 0 <= i < source_layers]
    if bad:
        raise ValueError(f"--init-layers {bad}: the source checkpoint has blocks 0..{source_layers - 1}")
    return layers


def block_state(state: dict[str, torch.Tensor], layers: list[int]) -> dict[str, torch.Tensor]:
    """``state`` with only the blocks in ``layers``, renumbered 0.. in that order; the rest kept."""
    out = {}
    for name, value in state.items():
        m = _BLOCK.match(name)
        if not m:
            out[name] = value
            continue
        for new, old in enumerate(layers):   # a block may be named twice
            if old == int(m.group(2)):
                out[f"{m.group(1)}{new}{m.group(3)}"] = value
    return out


def warm_start(net: torch.nn.Module, source: str, layers: str | None, tokenizer) -> list[int]:
    """Load ``source``'s embeddings, final norm, head and the chosen blocks into ``net``; returns the blocks.

    The source must share the width, heads, MLP width and the tokenizer (same vocabulary, same ids), or
    the copied rows would mean other tokens: a ValueError says which.
    """
    src = load_model(source, dtype=torch.float32)
    if type(src.module) is not type(net):
        raise ValueError(f"--init-from {source}: a {src.module.arch} checkpoint, the new model is {net.arch}")
    for key in _SHAPE:
        a, b = getattr(src.module.config, key), getattr(net.config, key)
        if a != b:
            raise ValueError(f"--init-from {source}: {key} is {a}, the new model's is {b}")
    if src.tokenizer is None or src.tokenizer.get_vocab() != tokenizer.get_vocab():
        raise ValueError(f"--init-from {source}: its tokenizer differs from the run's")
    chosen = parse_layers(layers, src.module.config.n_layers, net.config.n_layers)
    state, own = block_state(src.module.state_dict(), chosen), net.state_dict()
    for name, value in state.items():
        if name in own and own[name].shape != value.shape:
            raise ValueError(f"--init-from {source}: {name} is {tuple(value.shape)}, the new model's is "
                             f"{tuple(own[name].shape)}")
    net.load_state_dict(state, strict=True)
    return chosen


__all__ = ["parse_layers", "block_state", "warm_start"]
