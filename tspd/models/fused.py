"""Fused projections (the full forward near its matmul floor): q, k and v as one matmul, and a SwiGLU's gate
and up projections as one, built at load time from the checkpoint's own weights (concatenated, not changed).

At batch 1 a forward is a chain of small matmuls over the same input; fusing them reads the input once and
launches one kernel instead of three (or two). The logits are the same up to the matmul's summation order, so
:func:`tspd.models.loading.load_model` fuses on a GPU by default and leaves CPU decoding, whose committed
runs are reproduced bit for bit, as it is. A fused network is for decoding: it cannot be saved.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class FusedLinear(nn.Module):
    """Linear layers of one input as one matmul; ``forward`` returns their outputs in order."""

    def __init__(self, *linears: nn.Linear):
        super().__init__()
        self.sizes = [lin.out_features for lin in linears]
        self.weight = nn.Parameter(torch.cat([lin.weight.detach() for lin in linears]), requires_grad=False)
        biases = [lin.bias for lin in linears]
        if any(b is not None for b in biases) and not all(b is not None for b in biases):
            raise ValueError("fusing Linear layers with and without a bias")
        self.bias = None if biases[0] is None else nn.Parameter(torch.cat([b.detach() for b in biases]),
                                                                requires_grad=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return F.linear(x, self.weight, self.bias).split(self.sizes, dim=-1)


def fuse_linears(module: nn.Module, fused_name: str, names: tuple[str, ...]) -> None:
    """``module.<fused_name>`` = the Linear layers ``names`` as one :class:`FusedLinear`; they are removed."""
    setattr(module, fused_name, FusedLinear(*(getattr(module, n) for n in names)))
    for n in names:
        delattr(module, n)


def is_fused(network: nn.Module) -> bool:
    return any(isinstance(m, FusedLinear) for m in network.modules())


def fuse_projections(network: nn.Module) -> int:
    """Fuse every layer of ``network`` that offers it (a ``fuse_projections`` method); returns how many did."""
    layers = [m for m in network.modules() if m is not network and hasattr(m, "fuse_projections")]
    for layer in layers:
        layer.fuse_projections()
    return len(layers)


__all__ = ["FusedLinear", "fuse_linears", "is_fused", "fuse_projections"]
