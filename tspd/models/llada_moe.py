"""LLaDA-MoE-7B-A1B (arXiv 2509.24389): a bidirectional OLMoE-style mixture-of-experts transformer.

Facts from dInfer's ``tools/modeling_fused_lladamoe.py`` and the model's remote code (``LLaDAMoEAttention``,
``LLaDAMoESparseMoeBlock``, ``LLaDAMoEDecoderLayer`` as vendored in ``ZHZisZZ/dllm-trainer:
dllm/pipelines/llada/models/modeling_lladamoe.py``; dInfer's ``modeling_fused_olmoe.py`` agrees):

* attention: ``self_attn.{q,k,v,o}_proj`` all with bias iff ``attention_bias``; with ``qk_layernorm``
  a **per-head** RMSNorm over head_dim (``self_attn.q_norm/k_norm``, weight [head_dim]) on q and k
  before RoPE (HF's OLMoE normalises over the whole projection instead); optional ``clip_qkv``;
  RoPE over the first ``head_dim * partial_rotary_factor`` dims; no causal mask.
* MoE layers (``moe_layer_freq[i] != 0``): router ``mlp.gate`` (Linear, no bias) -> softmax in
  float32 (+ ``mlp.expert_bias`` when ``moe_router_enable_expert_bias``) -> top-``num_experts_per_tok``
  **without renormalisation** (the remote code hard-codes ``norm_topk_prob = False`` whatever the
  config says, dInfer passes ``renormalize=False``; we do the same) -> weights cast to the hidden dtype
  -> sum of SwiGLU experts ``mlp.experts.{j}.{gate,up,down}_proj``; plus ``shared_expert.*`` (at layer
  level) when ``shared_expert_intermediate_size`` is set.
* dense layers (``moe_layer_freq[i] == 0``): ``mlp.{gate,up,down}_proj`` of ``dense_intermediate_size``.
* ``mask_token_id`` is not a field of the remote config; it comes from config.json when present,
  else from the tokenizer (``tspd.models.loading.special_tokens``); dInfer uses 156895.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from tspd.models.hf_decoder import Attention, DecoderLayer, DecoderLM, HFDecoderConfig, SwiGLU


@dataclass(kw_only=True)
class LLaDAMoEConfig(HFDecoderConfig):
    """LLaDA-MoE's ``config.json`` (field names of ``LLaDAMoEConfig``)."""
    num_experts: int
    num_experts_per_tok: int
    expert_intermediate_size: int
    dense_intermediate_size: int | None = None          # needed only if some layer is dense
    shared_expert_intermediate_size: int | None = None  # None (or <= 0): no shared expert
    moe_layer_freq: list[int] = field(default_factory=list)   # per layer, 0 = dense; [] = every layer MoE
    qk_layernorm: bool = False
    attention_bias: bool = False
    clip_qkv: float | None = None
    partial_rotary_factor: float | None = 1.0           # None / <= 0 (the remote default is -1) -> 1.0
    norm_topk_prob: bool | None = None                  # ignored, as by the remote code: never renormalised
    moe_router_enable_expert_bias: bool | None = None
    moe_router_score_function: str | None = None        # "softmax" (or None) is the only scoring implemented
    rms_norm_eps: float = 1e-5
    model_type: str = "lladamoe"

    default_architectures = ("LLaDAMoEModelLM",)

    @property
    def rotary_dim(self) -> int:
        f = self.partial_rotary_factor
        return self.head_dim if f is None or f <= 0 else int(self.head_dim * f)

    def is_moe(self, layer: int) -> bool:
        return not self.moe_layer_freq or self.moe_layer_freq[layer] != 0

    def validate(self) -> None:
        super().validate()
        if self.moe_layer_freq and len(self.moe_layer_freq) != self.num_hidden_layers:
            raise ValueError(f"moe_layer_freq has {len(self.moe_layer_freq)} entries for "
                             f"{self.num_hidden_layers} layers")
        if not 0 < self.num_experts_per_tok <= self.num_experts:
            raise ValueError(f"num_experts_per_tok={self.num_experts_per_tok} must lie in "
                             f"[1, num_experts={self.num_experts}]")
        if any(not self.is_moe(i) for i in range(self.num_hidden_layers)) and not self.dense_intermediate_size:
            raise ValueError("moe_layer_freq has dense layers but dense_intermediate_size is not set")
        if self.moe_router_score_function not in (None, "softmax"):
            raise ValueError(f"moe_router_score_function={self.moe_router_score_function!r} is not supported "
                             "(softmax only)")


class SparseMoE(nn.Module):
    """Top-k softmax-routed SwiGLU experts (``mlp.gate``, ``mlp.experts.{j}``, ``mlp.expert_bias``).

    Tokens are grouped by expert with one sort (one host sync for the group sizes), each expert runs
    once on its contiguous slice, and the weighted outputs are scattered back with ``index_add_``.
    """

    def __init__(self, cfg: LLaDAMoEConfig):
        super().__init__()
        self.top_k = cfg.num_experts_per_tok
        self.gate = nn.Linear(cfg.hidden_size, cfg.num_experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(cfg.hidden_size, cfg.expert_intermediate_size)
                                     for _ in range(cfg.num_experts))
        if cfg.moe_router_enable_expert_bias:   # a buffer in the remote code; a parameter here so it loads by name
            self.expert_bias = nn.Parameter(torch.zeros(cfg.num_experts), requires_grad=False)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-k (weights [N, k] in x's dtype, expert ids [N, k]) for tokens x [N, D]."""
        probs = F.softmax(self.gate(x), dim=-1, dtype=torch.float32)
        if hasattr(self, "expert_bias"):
            probs = probs + self.expert_bias.float()
        weights, experts = probs.topk(self.top_k, dim=-1)
        return weights.to(x.dtype), experts

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        shape = h.shape
        x = h.reshape(-1, shape[-1])
        weights, experts = self.route(x)
        flat = experts.reshape(-1)                               # [N * k] expert of each routed slot
        order = flat.argsort(stable=True)
        token = order // self.top_k                              # token of each slot, grouped by expert
        sizes = torch.bincount(flat, minlength=len(self.experts)).tolist()
        xs = x.index_select(0, token)
        outs = [expert(chunk) for expert, chunk in zip(self.experts, xs.split(sizes)) if chunk.shape[0]]
        ys = torch.cat(outs) * weights.reshape(-1).index_select(0, order)[:, None]
        return torch.zeros_like(x).index_add_(0, token, ys).reshape(shape)


class LLaDAMoEModelLM(DecoderLM):
    """LLaDA-MoE mask predictor (HF names: ``model.layers.{i}.mlp.experts.{j}...``, ``lm_head``)."""

    arch = "llada_moe"
    graph_capturable = False   # the expert routing reads group sizes on the host (.tolist()): no CUDA graphs

    def make_layer(self, cfg: LLaDAMoEConfig, index: int) -> DecoderLayer:
        attn = Attention(cfg, qkv_bias=cfg.attention_bias, o_bias=cfg.attention_bias,
                         qk_norm_eps=cfg.rms_norm_eps if cfg.qk_layernorm else None, clip_qkv=cfg.clip_qkv)
        if not cfg.is_moe(index):
            return DecoderLayer(cfg, attn, SwiGLU(cfg.hidden_size, cfg.dense_intermediate_size))
        shared = None
        if cfg.shared_expert_intermediate_size and cfg.shared_expert_intermediate_size > 0:
            shared = SwiGLU(cfg.hidden_size, cfg.shared_expert_intermediate_size)
        return DecoderLayer(cfg, attn, SparseMoE(cfg), shared_expert=shared)
