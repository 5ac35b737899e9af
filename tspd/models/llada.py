"""The LLaDA architecture: a bidirectional LLaMA-style transformer (Nie et al., 2025).

One block: RMSNorm (fp32) -> q/k/v projections -> rotate-half RoPE (fp32) -> SDPA with no causal mask
-> attn_out, then RMSNorm -> SwiGLU (ff_proj is the gate, up_proj the value, ff_out the down projection).
Module names follow the HF checkpoint (``model.transformer.blocks.{i}.q_proj`` ...), so a state dict
loads by name.

KV caching (Fast-dLLM's prefix and dual cache, paper Section 4.3) is :mod:`tspd.models.kv_cache`'s, shared by every
backbone: a forward over a window ``[offset, offset + T)`` writes that window's keys/values into the cache and
attends over the whole cached length.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tspd.models.fused import fuse_linears
from tspd.models.pointwise import EAGER
from tspd.models.config import LLaDAConfig
from tspd.models.kv_cache import KVCache, attend


class RMSNorm(nn.Module):
    """x * rsqrt(mean(x^2) + eps), computed in fp32, cast back, then scaled (LLaDA's RMSLayerNorm).

    ``F.rms_norm`` computes exactly that (bit for bit on the CPU) and is one fused kernel on CUDA
    instead of five: a decoding step at LLaDA-8B's shape launches 64 of these norms.
    ``ops``: eager or compiled element-wise chains (:mod:`tspd.models.pointwise`).
    """

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.ops = EAGER

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ops.rms_norm(x, self.weight, self.eps)


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of NeoX rotary angles in fp32 for integer ``positions`` [B, T] -> [B, 1, T, head_dim]."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim)
    angles = positions.float()[..., None] * inv_freq          # [B, T, D/2]
    angles = torch.cat([angles, angles], dim=-1)[:, None]      # [B, 1, T, D]
    return angles.cos(), angles.sin()


def window_inputs(input_ids, attention_mask, position_ids, cache: KVCache | None, offset: int, *,
                  rotary_dim: int, theta: float, kv_heads: int, head_dim: int, dtype):
    """RoPE cos/sin, the key-padding mask and the cache state for a window forward (all backbones).

    A full forward (offset 0 over the whole canvas) (re)allocates the cache; a window needs a filled one.
    """
    B, T = input_ids.shape
    if position_ids is None:
        position_ids = torch.arange(offset, offset + T, device=input_ids.device).expand(B, T)
    cos, sin = rope_cos_sin(position_ids, rotary_dim, theta)
    if cache is not None:
        if offset == 0 and T >= cache.length:
            cache.allocate(B, kv_heads, T, head_dim, input_ids.device, dtype)
        elif cache.length == 0:
            raise RuntimeError("KVCache is empty: run a full forward (offset=0, whole canvas) first")
    attn_mask = None
    if attention_mask is not None:   # [B, T_keys] key padding, or [B, 1, T, T_keys] as given (a causal mask)
        attn_mask = attention_mask.bool()
        attn_mask = attn_mask if attn_mask.dim() == 4 else attn_mask[:, None, None, :]   # True = attend
    return cos, sin, attn_mask


class Block(nn.Module):
    def __init__(self, cfg: LLaDAConfig):
        super().__init__()
        self.cfg = cfg
        d, hd = cfg.d_model, cfg.head_dim
        self.attn_norm = RMSNorm(d, cfg.rms_norm_eps)
        self.q_proj = nn.Linear(d, cfg.n_heads * hd, bias=False)
        self.k_proj = nn.Linear(d, cfg.kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(d, cfg.kv_heads * hd, bias=False)
        self.attn_out = nn.Linear(cfg.n_heads * hd, d, bias=False)
        self.ff_norm = RMSNorm(d, cfg.rms_norm_eps)
        self.ff_proj = nn.Linear(d, cfg.mlp_hidden_size, bias=False)  # gate (SiLU applied)
        self.up_proj = nn.Linear(d, cfg.mlp_hidden_size, bias=False)
        self.ff_out = nn.Linear(cfg.mlp_hidden_size, d, bias=False)
        self.qkv = self.gate_up = None   # set by fuse_projections (tspd.models.fused)
        self.ops = EAGER                 # element-wise chains, eager or compiled (tspd.models.pointwise)

    def fuse_projections(self) -> None:
        fuse_linears(self, "qkv", ("q_proj", "k_proj", "v_proj"))
        fuse_linears(self, "gate_up", ("ff_proj", "up_proj"))

    def forward(self, x, cos, sin, attn_mask, cache: KVCache | None, layer: int, offset: int):
        B, T, _ = x.shape
        cfg = self.cfg
        h = self.attn_norm(x)
        q, k, v = self.qkv(h) if self.qkv is not None else (self.q_proj(h), self.k_proj(h), self.v_proj(h))
        # token-major [B, T, heads, D] views of the projections: RoPE reads them row by row (not strided, as
        # after a transpose) and attention gets [B, H, T, D] views whose output is token-major again, so the
        # reshape before attn_out copies nothing (issue 51). Element for element the same values.
        q = q.reshape(B, T, cfg.n_heads, cfg.head_dim)
        k = k.reshape(B, T, cfg.kv_heads, cfg.head_dim)
        v = v.reshape(B, T, cfg.kv_heads, cfg.head_dim)
        q, k = self.ops.rope_qk(q, k, cos.transpose(1, 2), sin.transpose(1, 2))   # one pass over both
        att = attend(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask, cache, layer, offset)
        x = x + self.attn_out(att.transpose(1, 2).reshape(B, T, -1))
        h = self.ff_norm(x)
        gate, up = self.gate_up(h) if self.gate_up is not None else (self.ff_proj(h), self.up_proj(h))
        return x + self.ff_out(self.ops.swiglu(gate, up))


class LLaDAModel(nn.Module):
    """Holds ``transformer`` = {wte, blocks, ln_f, ff_out} exactly as LLaDA's checkpoints name it."""

    def __init__(self, cfg: LLaDAConfig):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg.rows, cfg.d_model),
            blocks=nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers)),
            ln_f=RMSNorm(cfg.d_model, cfg.rms_norm_eps),
        ))
        if not cfg.weight_tying:
            self.transformer["ff_out"] = nn.Linear(cfg.d_model, cfg.rows, bias=False)


class LLaDAModelLM(nn.Module):
    """LLaDA mask predictor. ``forward(input_ids) -> logits [B, T, V]``.

    Args (forward):
        input_ids: [B, T] token ids of the window being computed.
        attention_mask: optional [B, T_total] with 1 for real tokens and 0 for left padding, over the
            whole canvas (T_total = T without a cache). Padding keys are never attended.
        position_ids: optional [B, T] RoPE positions of the window (default ``offset + arange(T)``).
        cache: optional :class:`KVCache`; the window's keys/values are written at ``offset``.
        offset: canvas index of the window's first token.
        logits_from, logits_to: compute the head only for window rows ``[logits_from, logits_to)`` (None:
            to T). The loop never reads the prompt's logits (at LLaDA-8B's shape the head over an 896-token
            prompt is ~6 % of a full forward), and a step whose readers look only at the block reads none
            of the rows after it either (:meth:`tspd.decoding.reads.StepPlan.reads_beyond_block`).
    """

    arch = "llada"
    graph_capturable = True   # its forward never waits for the host: CUDA graphs can replay it (tspd.decoding.graphs)

    def __init__(self, cfg: LLaDAConfig):
        super().__init__()
        self.config = cfg
        self.model = LLaDAModel(cfg)

    @property
    def device(self) -> torch.device:
        return self.model.transformer["wte"].weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.transformer["wte"].weight.dtype

    def new_cache(self) -> KVCache:
        return KVCache(self.config.n_layers)

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache: KVCache | None = None, offset: int = 0,
                logits_from: int = 0, logits_to: int | None = None):
        cfg, tr = self.config, self.model.transformer
        cos, sin, attn_mask = window_inputs(input_ids, attention_mask, position_ids, cache, offset,
                                            rotary_dim=cfg.head_dim, theta=cfg.rope_theta,
                                            kv_heads=cfg.kv_heads, head_dim=cfg.head_dim, dtype=self.dtype)
        x = tr["wte"](input_ids)
        for i, block in enumerate(tr["blocks"]):
            x = block(x, cos, sin, attn_mask, cache, i, offset)
        x = tr["ln_f"](x[:, logits_from:logits_to])
        head = tr["wte"].weight if cfg.weight_tying else tr["ff_out"].weight
        return F.linear(x, head)
