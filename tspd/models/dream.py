"""Dream-7B (Ye et al., 2025): a Qwen2 transformer run bidirectionally, with shifted logits.

Architecture (``DreamLM/Dream`` and ``NVlabs/Fast-dLLM: dream/model/modeling_dream.py``): Qwen2 layers with
q/k/v projections **with bias**, ``o_proj`` without, GQA, RMSNorm (``rms_norm_eps``), rotate-half
RoPE (``rope_theta``), SwiGLU ``mlp.{gate,up,down}_proj``, head tied or not per
``tie_word_embeddings``; SDPA with ``is_causal=False``. ``config.json`` uses Qwen2's field names and
``"model_type": "Dream"``; ``mask_token_id`` is in it.

The logit shift, in one place
-----------------------------
Dream keeps the autoregressive alignment of its Qwen2.5 initialisation: the distribution for canvas
position ``i`` is the transformer output at ``i - 1``; Dream's own code shifts after every forward,
``logits = cat([logits[:, :1], logits[:, :-1]])`` (position 0 copies its own row; it is prompt).

:meth:`DreamModelLM.forward` returns **already shifted** logits, so row ``j`` of its result is the
distribution for window position ``j`` and the generation loop, every controller and both caches
treat Dream exactly like LLaDA:

* full forward (``offset == 0``), or no cache: Dream's own rule over the input.
* window forward at ``offset = w0 > 0`` with a cache: the window is extended one position to the left,
  ``[w0 - 1, w1)``; row ``j`` of the result is output ``w0 - 1 + j``, i.e. the distribution for
  ``w0 + j``. The token and RoPE position of ``w0 - 1`` come from the cache (:class:`ShiftCache`
  remembers the ids/positions of every forward). Position ``w0 - 1`` is recomputed like the window,
  its keys/values rewritten: one extra query row per cached forward.

How this compares with Fast-dLLM (``Fast-dLLM: dream/model/generation_utils_block.py``): its cached
window starts at ``block_start`` and applies Dream's rule inside the window, so the first block
position would read its own row. Fast-dLLM therefore commits ``x[block_start]`` from each block's
full forward unconditionally (no threshold, nothing else committed in that forward) and decodes
only the remaining positions from the cached windows. Here the first step of a block (the full
forward) returns the very same logits for every position, but it is an ordinary decoding step: the
controller chooses what to commit, ``block_start`` included, and in later cached steps
``block_start``'s distribution is refreshed from the recomputed row ``block_start - 1``. So decoding
with a cache follows the same rule as decoding without one (the cache only approximates stale
keys/values, as for LLaDA); it differs from Fast-dLLM's Dream path exactly by that forced first
commit, which our loop does not make.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from tspd.models.kv_cache import KVCache
from tspd.models.hf_decoder import Attention, DecoderLayer, DecoderLM, HFDecoderConfig, SwiGLU


@dataclass(kw_only=True)
class DreamConfig(HFDecoderConfig):
    """Dream-7B's ``config.json`` (Qwen2 names). ``use_sliding_window`` must be false (it is for Dream)."""
    intermediate_size: int
    rms_norm_eps: float = 1e-6
    use_sliding_window: bool = False
    model_type: str = "Dream"

    default_architectures = ("DreamModel",)

    def validate(self) -> None:
        super().validate()
        if self.use_sliding_window:
            raise ValueError("use_sliding_window=true is not supported (Dream attends over the whole canvas)")


class ShiftCache(KVCache):
    """A :class:`~tspd.models.kv_cache.KVCache` that also remembers the canvas tokens and RoPE positions it saw.

    Dream's window forward needs the token left of the window (see the module docstring).
    """

    def __init__(self, n_layers: int):
        super().__init__(n_layers)
        self.ids: torch.Tensor | None = None   # [B, T_total]
        self.pos: torch.Tensor | None = None   # [B, T_total]

    def remember(self, offset: int, ids: torch.Tensor, pos: torch.Tensor) -> None:
        if offset == 0 and ids.shape[1] >= self.length:
            if self.ids is None or self.ids.shape != ids.shape:   # static buffers, as the KV (CUDA graphs)
                self.ids, self.pos = torch.empty_like(ids), torch.empty_like(ids)
            self.ids.copy_(ids)
            self.pos.copy_(pos.expand_as(ids))
        else:
            self.ids[:, offset:offset + ids.shape[1]] = ids
            self.pos[:, offset:offset + ids.shape[1]] = pos

    def left_of(self, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Token and position at canvas index ``offset - 1``, each [B, 1]."""
        if self.ids is None:
            raise RuntimeError("KVCache is empty: run a full forward (offset=0, whole canvas) first")
        return self.ids[:, offset - 1:offset], self.pos[:, offset - 1:offset]

    def select(self, rows: torch.Tensor) -> None:
        super().select(rows)
        if self.ids is not None:
            self.ids, self.pos = self.ids[rows], self.pos[rows]


class DreamModelLM(DecoderLM):
    """Dream mask predictor; ``forward`` returns shifted logits (row j = distribution for position j)."""

    arch = "dream"

    def make_layer(self, cfg: DreamConfig, index: int) -> DecoderLayer:
        attn = Attention(cfg, qkv_bias=True, o_bias=False)
        return DecoderLayer(cfg, attn, SwiGLU(cfg.hidden_size, cfg.intermediate_size))

    def new_cache(self) -> ShiftCache:
        return ShiftCache(self.config.num_hidden_layers)

    def unshifted(self, input_ids, attention_mask=None, position_ids=None, cache=None, offset: int = 0,
                  logits_from: int = 0, logits_to: int | None = None):
        """The transformer's own outputs (row i = output at position i), as Qwen2 computes them."""
        return super().forward(input_ids, attention_mask, position_ids, cache, offset, logits_from, logits_to)

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache: KVCache | None = None, offset: int = 0,
                logits_from: int = 0, logits_to: int | None = None):
        """Shifted logits of window rows ``[logits_from, logits_to)`` (None: to T): row j from the output at
        position j - 1."""
        B, T = input_ids.shape
        end = T if logits_to is None else logits_to
        if position_ids is None:
            position_ids = torch.arange(offset, offset + T, device=input_ids.device).expand(B, T)
        position_ids = position_ids.expand(B, T)
        if cache is not None and not isinstance(cache, ShiftCache):
            raise TypeError("Dream needs the cache made by model.new_cache() (it remembers the canvas tokens)")
        if cache is None or offset == 0:
            out = self.unshifted(input_ids, attention_mask, position_ids, cache, offset, max(logits_from - 1, 0),
                                 max(end - 1, 1))
            if cache is not None:
                cache.remember(offset, input_ids, position_ids)
            if logits_from:                                         # outputs k-1 .. end-2 -> positions k .. end-1
                return out
            return torch.cat([out[:, :1], out[:, :end - 1]], dim=1)   # Dream's rule: row 0 keeps its own
        prev_id, prev_pos = cache.left_of(offset)
        cache.remember(offset, input_ids, position_ids)
        out = self.unshifted(torch.cat([prev_id, input_ids], 1), attention_mask,
                             torch.cat([prev_pos, position_ids], 1), cache, offset - 1, logits_from, end)
        return out                                                  # outputs w0-1 .. w1-2 -> positions w0 .. w1-1
