"""The element-wise chains of a transformer block as pure functions: RMSNorm, rotate-half RoPE, SwiGLU's gate.

Eager, each is a chain of small kernels over the whole window: RoPE in fp32 alone is eight passes over q and k
(upcast, halves, negate, concatenate, two products, sum, downcast), which at LLaDA-8B's shape moves about
0.4 GB per layer on a full forward. ``torch.compile`` turns each chain into one kernel that reads its inputs
once (issue 51: the full forward near its matmul floor). The arithmetic is the same (fp32 where the eager
code is fp32); only the order of a reduction's sums may differ, so compiled logits equal eager ones within
bf16 rounding, not bit for bit.

Every module that uses them holds ``ops``, a :class:`Pointwise`: :data:`EAGER` by default, so CPU decoding
(whose committed runs are reproduced bit for bit) never changes; :func:`use_compiled` switches a network.
The first forward of each new window shape compiles (tens of seconds once per process; CUDA graphs capture
after their warm-up forwards, so the replays run the compiled kernels).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x * rsqrt(mean(x^2) + eps) in fp32, cast back, then scaled (LLaDA's RMSLayerNorm)."""
    h = F.rms_norm(x.float(), (x.shape[-1],), eps=eps)
    return h.to(x.dtype) * weight


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE in fp32: x*cos + rotate_half(x)*sin, rotate_half(x) = cat(-x2, x1)."""
    xf = x.float()
    x1, x2 = xf.chunk(2, dim=-1)
    return (xf * cos + torch.cat([-x2, x1], dim=-1) * sin).to(x.dtype)


def rope_qk(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`rope` on token-major q [B, T, Hq, D] and k [B, T, Hk, D] in one pass (one chain of kernels, not two;
    compiled, one kernel and no concatenation); ``cos``/``sin`` broadcast as [B, T, 1, D]."""
    return rope(torch.cat([q, k], 2), cos, sin).split([q.shape[2], k.shape[2]], 2)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """SiLU(gate) * up: the gated value a SwiGLU feeds its down projection."""
    return F.silu(gate) * up


@dataclass(frozen=True)
class Pointwise:
    """One implementation of each chain; a block calls ``self.ops.rope(...)`` and so on."""
    rms_norm: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]
    rope: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
    rope_qk: Callable[..., tuple[torch.Tensor, torch.Tensor]]
    swiglu: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    compiled: bool = False


EAGER = Pointwise(rms_norm, rope, rope_qk, swiglu)


@functools.cache
def compiled_chains() -> Pointwise:
    """The same functions through ``torch.compile`` (built once per process, compiled at first call)."""
    return Pointwise(*(torch.compile(f, fullgraph=True) for f in (rms_norm, rope, rope_qk, swiglu)),
                     compiled=True)


def compiles_here(device: torch.device) -> bool:
    """Whether the chains are compiled by default on ``device``: a CUDA GPU with Triton installed (inductor's GPU
    code generator; without it the first forward would fail, so the chains stay eager)."""
    import importlib.util
    return device.type == "cuda" and importlib.util.find_spec("triton") is not None


def use_compiled(network: nn.Module, on: bool = True) -> int:
    """Give every module of ``network`` that holds ``ops`` the compiled (or eager) chains; returns how many."""
    ops = compiled_chains() if on else EAGER
    users = [m for m in network.modules() if isinstance(getattr(m, "ops", None), Pointwise)]
    for m in users:
        m.ops = ops
    return len(users)


def is_compiled(network: nn.Module) -> bool:
    return any(getattr(m, "ops", None) is not None and getattr(m.ops, "compiled", False) for m in network.modules())


__all__ = ["Pointwise", "EAGER", "compiled_chains", "compiles_here", "use_compiled", "is_compiled", "rms_norm", "rope", "rope_qk", "swiglu"]
