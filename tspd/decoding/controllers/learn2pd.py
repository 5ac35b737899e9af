"""Learn2PD: a learned accept filter over the block's confidences (Bao et al. 2025, arXiv 2509.25188).

The filter is a 2-layer MLP, Linear(32, 32) - ReLU - Linear(32, 32), reading the top-1 confidences of
*all* positions of the current block (decoded ones included), zero-padded to width 32, and giving one
logit per position. Each step commits the masked positions with sigmoid(logit) > 0.96 together with
the LLaDA schedule's top-k most confident masked positions (``view.quota``). With CE on, the filter
reads CE's confidences (that is how the paper's Table 9 plugs CE into Learn2PD).

End-of-Text Prediction (``eot=True``), after the step's commit:
  * if a position the filter accepted has argmax EOS, everything after the first such position
    becomes EOS;
  * otherwise, if any position still masked after this step (any block) has argmax EOS, everything
    after the one with the highest confidence (first on ties) becomes EOS;
the position itself stays as it is (it may still be decoded later). Expressed as ``Decision.eos_at``.

Weights: ``<model dir>/controllers/learn2pd.safetensors`` + ``.json`` (see :mod:`tspd.decoding.controllers.weights`),
trained by ``python -m tspd train-controller --kind learn2pd``.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from tspd.decoding.controllers.base import Controller, Decision, StepView, top_k_mask
from tspd.decoding.controllers.weights import load_net

WIDTH = 32   # the filter's fixed input width: Learn2PD's block length


class Learn2PDNet(nn.Module):
    """Linear(w, w) - ReLU - Linear(w, w) over a confidence vector: [..., Lb <= w] -> logits [..., Lb]."""

    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.width = width
        self.mlp = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))

    def forward(self, conf: torch.Tensor) -> torch.Tensor:
        Lb = conf.shape[-1]
        if Lb > self.width:
            raise ValueError(f"block length {Lb} exceeds the filter width {self.width}")
        return self.mlp(F.pad(conf.float(), (0, self.width - Lb)))[..., :Lb]


def eot_position(view: StepView, commit: torch.Tensor, accepted: torch.Tensor) -> torch.Tensor:
    """End-of-Text Prediction: generated-region index after which everything is EOS, -1 for none ([B])."""
    B, Lb = commit.shape
    s = view.block_start
    hit = accepted & (view.x0 == view.eos_id)
    first = torch.where(hit.any(-1), hit.float().argmax(-1) + s, torch.full((B,), -1, device=commit.device))
    still = view.canvas_masked.clone()
    still[:, s:s + Lb] &= ~commit
    eos = still & (view.canvas_x0 == view.eos_id)
    best = view.canvas_conf.float().masked_fill(~eos, float("-inf")).argmax(-1)   # first index on ties
    best = torch.where(eos.any(-1), best, torch.full_like(best, -1))
    return torch.where(first >= 0, first, best)


class Learn2PD(Controller):
    name = "learn2pd"

    def __init__(self, weights: str | Path | None = None, name: str = "learn2pd", accept: float = 0.96,
                 eot: bool = False, net: Learn2PDNet | None = None):
        if not 0.0 < accept < 1.0:
            raise ValueError(f"accept must lie in (0, 1), got {accept}")
        self.weights, self.stem_name, self.accept, self.eot = weights, name, accept, eot
        self.reads = frozenset({"quota"} | ({"canvas_x0", "canvas_conf", "canvas_masked"} if eot else set()))   # + EoTP
        self.net = net.eval() if net is not None else None

    def bind(self, model) -> None:
        if self.net is None:
            self.net = load_net(model, self.stem_name, self.weights, "learn2pd",
                                lambda config: Learn2PDNet(config.get("width", WIDTH)))
        self.net.to(model.device)

    @torch.no_grad()
    def decide(self, view: StepView) -> Decision:
        dev = next(self.net.parameters()).device
        logits = self.net(view.conf.to(dev)).to(view.masked.device)
        accepted = view.masked & (torch.sigmoid(logits) > self.accept)
        commit = accepted | top_k_mask(view.conf, view.masked, view.quota, view.uniform_quota)
        if not self.eot:
            return Decision(commit=commit)
        eos_at = eot_position(view, commit, accepted)
        # the reference truncates the canvas after eos_at: commits beyond it are dropped (they become EOS)
        pos = view.block_start + torch.arange(commit.shape[1], device=commit.device)
        commit &= ~((eos_at[:, None] >= 0) & (pos[None, :] > eos_at[:, None]))
        return Decision(commit=commit, eos_at=eos_at)
