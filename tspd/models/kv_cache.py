"""The KV cache of Fast-dLLM's prefix and dual cache (paper Section 4.3), one mechanism for every backbone.

A :class:`KVCache` holds keys and values for every position of the canvas; a forward over a window
``[offset, offset + T)`` writes that window's fresh keys/values into the cache (:func:`attend`) and attends over the
whole cached length. The prefix cache forwards ``[block_start, end)``; the dual cache forwards only
``[block_start, block_end)``. Keys are cached after RoPE (positions never move). Which window a step forwards is
the loop's (:mod:`tspd.decoding.window`).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


class KVCache:
    """Keys/values of every canvas position, per layer: [B, kv_heads, T_total, head_dim].

    Allocated once for the whole canvas (static buffers); forwards write their window in place.
    """

    def __init__(self, n_layers: int):
        self.k: list[torch.Tensor | None] = [None] * n_layers
        self.v: list[torch.Tensor | None] = [None] * n_layers
        self.length = 0

    def allocate(self, batch: int, kv_heads: int, length: int, head_dim: int, device, dtype) -> None:
        shape = (batch, kv_heads, length, head_dim)
        if self.k[0] is None or self.k[0].shape != shape or self.k[0].dtype != dtype:
            self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in self.k]
            self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in self.v]
        self.length = length

    def update(self, layer: int, offset: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the window's k/v at [offset, offset+T) and return the whole cached k/v to attend over."""
        t = k.shape[2]
        self.k[layer][:, :, offset:offset + t] = k
        self.v[layer][:, :, offset:offset + t] = v
        return self.k[layer], self.v[layer]

    def select(self, rows: torch.Tensor) -> None:
        """Keep only batch rows ``rows`` (used when finished rows leave the batch)."""
        self.k = [t[rows] if t is not None else None for t in self.k]
        self.v = [t[rows] if t is not None else None for t in self.v]


def attend(q, k, v, attn_mask, cache: KVCache | None, layer: int, offset: int) -> torch.Tensor:
    """Bidirectional attention of the window's ``q`` [B, H, T, D] over its keys and values, written into ``cache``
    first when there is one (then over every cached position); grouped k/v heads repeated to ``q``'s (all backbones)."""
    if cache is not None:
        k, v = cache.update(layer, offset, k, v)
    if k.shape[1] != q.shape[1]:
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=False)
