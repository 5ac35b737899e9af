"""Backbones in the Hugging Face decoder layout (Dream-7B, LLaDA-MoE) behind LLaDA's forward contract.

Dream-7B (Qwen2) and LLaDA-MoE (OLMoE-style) checkpoints share one module tree, which this module
builds once (the Hugging Face Qwen2 / OLMoE layouts)::

    model.embed_tokens
    model.layers.{i}.input_layernorm              RMSNorm
    model.layers.{i}.self_attn.{q,k,v,o}_proj     biases per architecture
    model.layers.{i}.self_attn.{q,k}_norm         optional per-head RMSNorm over head_dim (LLaDA-MoE)
    model.layers.{i}.post_attention_layernorm
    model.layers.{i}.mlp...                       SwiGLU (Dream, dense LLaDA-MoE layers) or experts
    model.norm
    lm_head                                       absent when tie_word_embeddings

Attention is bidirectional (both models force ``is_causal=False``). The RMSNorm, rotary embedding and
:class:`~tspd.models.kv_cache.KVCache` are the shared ones, so ``forward(input_ids, attention_mask,
position_ids, cache, offset, logits_from, logits_to)`` behaves exactly like :class:`tspd.LLaDAModelLM`'s: a
full forward at offset 0 fills the cache for the whole canvas, a window forward writes its keys/values at
``offset`` and attends over the whole cache, and only rows ``[logits_from, logits_to)`` get logits.

The backbones built on it register in ``tspd.models.loading.ARCHITECTURES`` (by the ``model_type`` of a
``config.json``); this module knows none of them.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from tspd.models.fused import fuse_linears
from tspd.models.kv_cache import KVCache, attend
from tspd.models.llada import RMSNorm, window_inputs
from tspd.models.pointwise import EAGER, Pointwise


# ------------------------------------------------------------------------------------------------
# Configuration with HF field names
# ------------------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class HFDecoderConfig:
    """Fields every HF-layout decoder shares, read from ``config.json`` under their HF names.

    Shape fields have no default: a checkpoint must state them. Unknown fields are kept verbatim in
    ``extra`` and written back by :meth:`to_dict`.
    """
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    vocab_size: int
    num_key_value_heads: int | None = None   # None -> num_attention_heads (no GQA)
    head_dim: int | None = None               # None -> hidden_size // num_attention_heads (set on init)
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None          # only plain RoPE is implemented
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 4096
    mask_token_id: int | None = None
    eos_token_id: int | None = None           # a list in config.json -> its first entry (the list kept in extra)
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    model_type: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    default_architectures: ClassVar[tuple[str, ...]] = ()   # written by to_dict when config.json had none

    def __post_init__(self):
        if self.head_dim is None and self.num_attention_heads and not self.hidden_size % self.num_attention_heads:
            self.head_dim = self.hidden_size // self.num_attention_heads

    # LLaDAConfig-style aliases, so code written against the LLaDA config reads these too.
    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def n_heads(self) -> int:
        return self.num_attention_heads

    @property
    def n_layers(self) -> int:
        return self.num_hidden_layers

    @property
    def d_model(self) -> int:
        return self.hidden_size

    @property
    def rotary_dim(self) -> int:
        return self.head_dim

    def validate(self) -> None:
        if self.head_dim is None:
            raise ValueError(f"hidden_size={self.hidden_size} is not divisible by num_attention_heads="
                             f"{self.num_attention_heads} and config.json gives no head_dim")
        if self.num_attention_heads % self.kv_heads:
            raise ValueError(f"num_attention_heads={self.num_attention_heads} is not a multiple of "
                             f"num_key_value_heads={self.kv_heads}")
        if self.rotary_dim % 2 or not 0 < self.rotary_dim <= self.head_dim:
            raise ValueError(f"rotary dimension {self.rotary_dim} must be even and in (0, head_dim={self.head_dim}]")
        if self.rope_scaling:
            raise ValueError(f"rope_scaling={self.rope_scaling!r} is not supported (plain RoPE only)")

    @classmethod
    def _fields(cls) -> dict[str, dataclasses.Field]:
        return {f.name: f for f in dataclasses.fields(cls) if f.name != "extra"}

    @classmethod
    def from_dict(cls, d: dict[str, Any]):
        d = dict(d)
        if "rope_theta" not in d and isinstance(d.get("rope_parameters"), dict):   # transformers 5 layout
            d["rope_theta"] = d["rope_parameters"].get("rope_theta", 10000.0)
        fields = cls._fields()
        known = {k: v for k, v in d.items() if k in fields}
        extra = {k: v for k, v in d.items() if k not in fields}
        if isinstance(known.get("eos_token_id"), list):
            extra["eos_token_id_list"] = known["eos_token_id"]
            known["eos_token_id"] = known["eos_token_id"][0] if known["eos_token_id"] else None
        missing = [n for n, f in fields.items() if n not in known
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ValueError(f"config.json lacks {', '.join(missing)}")
        cfg = cls(**known, extra=extra)
        cfg.validate()
        return cfg

    def to_dict(self) -> dict[str, Any]:
        d = {name: getattr(self, name) for name in self._fields()}
        if d["rope_scaling"] is None:   # transformers 5 warns on any rope_scaling key (it wants rope_parameters)
            del d["rope_scaling"]
        extra = dict(self.extra)
        if "eos_token_id_list" in extra:
            d["eos_token_id"] = extra.pop("eos_token_id_list")
        d.update(extra)
        if self.default_architectures:
            d.setdefault("architectures", list(self.default_architectures))
        return d

    def save(self, directory: str | Path) -> None:
        Path(directory, "config.json").write_text(json.dumps(self.to_dict(), indent=2) + "\n")


# ------------------------------------------------------------------------------------------------
# Layers
# ------------------------------------------------------------------------------------------------
class SwiGLU(nn.Module):
    """``down_proj(silu(gate_proj(x)) * up_proj(x))``: Qwen2's MLP, OLMoE's experts and dense layers."""

    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inner, bias=False)
        self.up_proj = nn.Linear(hidden, inner, bias=False)
        self.down_proj = nn.Linear(inner, hidden, bias=False)
        self.gate_up = None   # set by fuse_projections (tspd.models.fused)
        self.ops = EAGER      # element-wise chains, eager or compiled (tspd.models.pointwise)

    def fuse_projections(self) -> None:
        fuse_linears(self, "gate_up", ("gate_proj", "up_proj"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x) if self.gate_up is not None else (self.gate_proj(x), self.up_proj(x))
        return self.down_proj(self.ops.swiglu(gate, up))


def apply_partial_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, ops: Pointwise = EAGER) -> torch.Tensor:
    """Rotate the first ``cos.shape[-1]`` dims of the head (rotate-half), pass the rest through.

    LLaDA-MoE supports ``partial_rotary_factor`` this way (``rotary_dim = cos.shape[-1]`` in its
    ``apply_rotary_pos_emb``); with a full rotary dimension this is :func:`tspd.models.pointwise.rope`.
    """
    rd = cos.shape[-1]
    if rd == x.shape[-1]:
        return ops.rope(x, cos, sin)
    return torch.cat([ops.rope(x[..., :rd], cos, sin), x[..., rd:]], dim=-1)


class Attention(nn.Module):
    """Bidirectional multi-head attention with GQA over the window (and the cache, when given).

    Per-head q/k RMSNorm (``q_norm``/``k_norm`` over head_dim) is applied before RoPE when
    ``qk_norm_eps`` is set, as in LLaDA-MoE's ``LLaDAMoEAttention``; ``clip_qkv`` clamps q, k, v.
    """

    def __init__(self, cfg: HFDecoderConfig, qkv_bias: bool, o_bias: bool,
                 qk_norm_eps: float | None = None, clip_qkv: float | None = None):
        super().__init__()
        d, hd = cfg.hidden_size, cfg.head_dim
        self.n_heads, self.kv_heads, self.head_dim, self.clip = cfg.num_attention_heads, cfg.kv_heads, hd, clip_qkv
        self.q_proj = nn.Linear(d, self.n_heads * hd, bias=qkv_bias)
        self.k_proj = nn.Linear(d, self.kv_heads * hd, bias=qkv_bias)
        self.v_proj = nn.Linear(d, self.kv_heads * hd, bias=qkv_bias)
        self.o_proj = nn.Linear(self.n_heads * hd, d, bias=o_bias)
        if qk_norm_eps is not None:
            self.q_norm = RMSNorm(hd, qk_norm_eps)
            self.k_norm = RMSNorm(hd, qk_norm_eps)
        self.qkv = None   # set by fuse_projections (tspd.models.fused)
        self.ops = EAGER  # element-wise chains, eager or compiled (tspd.models.pointwise)

    def fuse_projections(self) -> None:
        fuse_linears(self, "qkv", ("q_proj", "k_proj", "v_proj"))

    def forward(self, x, cos, sin, attn_mask, cache: KVCache | None, layer: int, offset: int):
        B, T, _ = x.shape
        q, k, v = self.qkv(x) if self.qkv is not None else (self.q_proj(x), self.k_proj(x), self.v_proj(x))
        q = q.reshape(B, T, self.n_heads, self.head_dim)
        k = k.reshape(B, T, self.kv_heads, self.head_dim)
        v = v.reshape(B, T, self.kv_heads, self.head_dim)
        if hasattr(self, "q_norm"):
            q, k = self.q_norm(q), self.k_norm(k)
        if self.clip is not None:
            q, k, v = (t.clamp(-self.clip, self.clip) for t in (q, k, v))
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        q, k = apply_partial_rope(q, cos, sin, self.ops), apply_partial_rope(k, cos, sin, self.ops)
        att = attend(q, k, v, attn_mask, cache, layer, offset)
        return self.o_proj(att.transpose(1, 2).reshape(B, T, -1))


class DecoderLayer(nn.Module):
    """Pre-norm residual block: ``x + attn(norm(x))``, then ``x + mlp(norm(x)) [+ shared_expert(norm(x))]``."""

    def __init__(self, cfg: HFDecoderConfig, self_attn: Attention, mlp: nn.Module,
                 shared_expert: nn.Module | None = None):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = self_attn
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = mlp
        if shared_expert is not None:
            self.shared_expert = shared_expert   # LLaDA-MoE names it at layer level, beside ``mlp``

    def forward(self, x, cos, sin, attn_mask, cache, layer: int, offset: int):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, attn_mask, cache, layer, offset)
        h = self.post_attention_layernorm(x)
        out = self.mlp(h)
        if hasattr(self, "shared_expert"):
            out = out + self.shared_expert(h)
        return x + out


class Backbone(nn.Module):
    """``model.*`` of the checkpoint: embeddings, layers, final norm."""

    def __init__(self, cfg: HFDecoderConfig, layers: list[DecoderLayer]):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(layers)
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class DecoderLM(nn.Module):
    """A bidirectional HF-layout decoder with :class:`tspd.LLaDAModelLM`'s forward and cache contract.

    Subclasses build the layers (:meth:`make_layer`); ``forward`` returns the logits of every window
    position, position ``i``'s row computed from position ``i``'s hidden state.
    """

    arch = "hf-decoder"
    graph_capturable = True   # its forward never waits for the host (LLaDA-MoE's routing does: False there)

    def __init__(self, cfg: HFDecoderConfig):
        super().__init__()
        self.config = cfg
        self.model = Backbone(cfg, [self.make_layer(cfg, i) for i in range(cfg.num_hidden_layers)])
        if not cfg.tie_word_embeddings:
            self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

    def make_layer(self, cfg: HFDecoderConfig, index: int) -> DecoderLayer:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def device(self) -> torch.device:
        return self.model.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.embed_tokens.weight.dtype

    def new_cache(self) -> KVCache:
        return KVCache(self.config.num_hidden_layers)

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache: KVCache | None = None, offset: int = 0,
                logits_from: int = 0, logits_to: int | None = None):
        """Logits [B, rows, V] of window rows ``[logits_from, logits_to)`` (None: to T) of ``input_ids`` at canvas
        ``offset`` (see :class:`tspd.LLaDAModelLM`)."""
        cfg = self.config
        cos, sin, attn_mask = window_inputs(input_ids, attention_mask, position_ids, cache, offset,
                                            rotary_dim=cfg.rotary_dim, theta=cfg.rope_theta,
                                            kv_heads=cfg.kv_heads, head_dim=cfg.head_dim, dtype=self.dtype)
        x = self.model.embed_tokens(input_ids)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, cos, sin, attn_mask, cache, i, offset)
        x = self.model.norm(x[:, logits_from:logits_to])
        head = self.model.embed_tokens.weight if cfg.tie_word_embeddings else self.lm_head.weight
        return F.linear(x, head)


__all__ = ["HFDecoderConfig", "DecoderLM", "DecoderLayer", "Attention", "SwiGLU", "apply_partial_rope"]
