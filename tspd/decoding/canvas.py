"""The canvas of paper Algorithm 1, line 1: ``X <- concat(x, [MASK]^L)`` for a batch of prompts.

Prompts (strings, id lists or a [B, P] tensor) are tokenized and left-padded to one width P; padding
is never attended (an attention mask) and RoPE positions skip it. A prompt that does not fit the
model's positions together with the window is refused, or with ``truncate`` keeps its last tokens.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from tspd.validate import UsageError, check_fits, max_positions


@dataclass
class Canvas:
    """``x`` [B, P + L]: the left-padded prompts, then L positions that start as MASK and are filled in
    place; ``attn`` the padding mask (None without padding), ``pos`` the RoPE positions."""
    x: torch.Tensor
    attn: torch.Tensor | None
    pos: torch.Tensor
    prompt_length: int                 # P, the width of the left-padded prompts
    mask_id: int
    truncated: list[bool]              # per prompt: left-truncated to fit the model's positions

    @property
    def gen(self) -> torch.Tensor:
        """The generated region [B, L] (a view: writes go to the canvas)."""
        return self.x[:, self.prompt_length:]

    def block(self, b: int, block_length: int) -> tuple[int, int]:
        """Canvas indices ``[s, e)`` of block ``b``."""
        s = self.prompt_length + b * block_length
        return s, s + block_length

    @property
    def gen_masked(self) -> torch.Tensor:
        """Which generated positions still hold MASK (the complement of Algorithm 1's F)."""
        return self.gen == self.mask_id


def prompt_ids(model, prompts, tokenizer, add_special_tokens: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Prompts (strings, id lists or a [B, P] tensor) -> left-padded ids [B, P] and mask [B, P]."""
    special = model.special
    if isinstance(prompts, torch.Tensor):
        ids = prompts if prompts.dim() == 2 else prompts[None]
        return ids.long(), torch.ones_like(ids, dtype=torch.long)
    if isinstance(prompts, str):
        prompts = [prompts]
    if not prompts:
        raise ValueError("no prompts given")
    if isinstance(prompts[0], str):
        tokenizer = tokenizer or model.tokenizer
        if tokenizer is None:
            raise ValueError("string prompts need a tokenizer (the model directory has none)")
        seqs = [tokenizer(p, add_special_tokens=add_special_tokens, verbose=False)["input_ids"] for p in prompts]
    else:
        seqs = [list(map(int, s)) for s in prompts]
    if any(len(s) == 0 for s in seqs):
        raise ValueError("empty prompt")
    width = max(map(len, seqs))
    ids = torch.tensor([[special.pad] * (width - len(s)) + s for s in seqs], dtype=torch.long)
    mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], dtype=torch.long)
    return ids, mask


def fit(ids, pmask, gen_length: int, limit: int | None, truncate: bool):
    """Prompts that fit the model's positions with the window; with ``truncate``, keep their last tokens."""
    if limit is None or ids.shape[1] + gen_length <= limit:      # no prompt is longer than the padded width
        return ids, pmask, [False] * len(ids)
    lengths = pmask.sum(-1)
    longest = int(lengths.max())
    if longest + gen_length <= limit:
        return ids, pmask, [False] * len(ids)
    if not truncate:
        check_fits(longest, gen_length, limit)
    keep = limit - gen_length
    if keep < 1:
        raise UsageError(f"gen_length {gen_length} leaves no room for a prompt in the model's {limit} positions")
    cut = (lengths > keep).tolist()
    warnings.warn(f"{sum(cut)} prompt(s) left-truncated to their last {keep} tokens (model positions {limit})")
    return ids[:, -keep:], pmask[:, -keep:], cut


def prepare_canvas(model, prompts, gen_length: int, *, tokenizer=None, add_special_tokens: bool = False,
                   truncate_prompt: bool = False) -> Canvas:
    """The batch's canvas on the model's device (Algorithm 1, line 1)."""
    mask_id, device = model.special.mask, model.device
    ids, pmask = prompt_ids(model, prompts, tokenizer, add_special_tokens)
    ids, pmask, truncated = fit(ids, pmask, gen_length, max_positions(model.config), truncate_prompt)
    B, P = ids.shape
    x = torch.cat([ids, ids.new_full((B, gen_length), mask_id)], 1).to(device)   # prompts may come on any device
    if bool(pmask.all()):                          # no padding: positions 0..T-1, nothing to mask out
        return Canvas(x, None, torch.arange(P + gen_length, device=device).expand(B, -1), P, mask_id, truncated)
    amask = torch.cat([pmask, pmask.new_ones(B, gen_length)], 1).to(device)
    pos = (amask.cumsum(-1) - 1).clamp_min(0)      # RoPE positions ignore left padding
    return Canvas(x, amask, pos, P, mask_id, truncated)


__all__ = ["Canvas", "prepare_canvas", "prompt_ids", "fit"]
