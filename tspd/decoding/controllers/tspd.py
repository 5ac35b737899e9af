"""TSPD: the paper's Temporal-Spatial Parallel Decoding controller (Section 3.2, Appendix A.3).

Every position of the current block carries a hidden state through the steps of the block. At each
forward the shared recurrent cell reads the position's trace features (Appendix A.3)

    r = [c, H, cbar, delta cbar, phi, u]     confidence (CE's when CE is on), entropy, EWMA confidence,
                                             momentum, relative position in the block, CE uncertainty

updates h = f(h, r) (Eq. 10), and a linear head gives the gate logit z = W h + b (Eq. 11). The action
is a hard gate: a masked position is fixed when sigmoid(z) >= 0.5 (Eq. 12). The loop then guarantees
progress (a row whose gate fired nowhere commits its most confident token). ``schedule=True`` adds the
LLaDA schedule's quota of most confident non-gated tokens (Learn2PD's union rule) for comparison.

All B * Lb positions advance in one LSTM step per forward (no Python loop over tokens), run as a few
fused matrix products (:class:`~tspd.decoding.controllers.gate_step.GateStep`); the hidden state is
reset at the start of each block. The step computes only the features the network reads (``reads``). Architecture options cover the paper's ablations:
``arch`` lstm / mlp and ``layers`` 1 / 2 / 4 (Table 6), ``hidden`` 8 / 12 / 16 / 17 / 25 (Table 8;
PyTorch's 2-layer LSTM has 1.1K / 2.2K / 3.7K / 4.1K / 8.5K parameters at these widths), and the
``features`` subset (Table 7).

Weights live beside the model: ``<model dir>/controllers/<name>.safetensors`` with a ``<name>.json``
of the architecture, written by ``python -m tspd train-controller``; :mod:`tspd.decoding.controllers.weights`
finds, checks, saves and loads them for every learned controller (Learn2PD too).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from tspd.decoding.controllers.base import Controller, Decision, StepView, top_k_mask
from tspd.decoding.controllers.gate_step import GateStep
from tspd.decoding.controllers.weights import load_net
from tspd.decoding.reads import EVERYTHING

# Feature names in the order of Appendix A.3's r = [c, H, cbar, delta cbar, phi, u].
FEATURES = ("conf", "entropy", "ewma", "momentum", "position", "u")
# Table 7's ablations name groups of features: "w.o. confidence" drops both confidence levels.
ABLATION_GROUPS = {"confidence": ("conf", "ewma"), "entropy": ("entropy",), "momentum": ("momentum",),
                   "position": ("position",), "u": ("u",)}
ARCHS = ("lstm", "mlp")
# the StepView field each feature is read from, where it is not always there (tspd.decoding.reads)
READS = {"entropy": "entropy", "ewma": "ewma", "momentum": "momentum", "u": "u"}


@dataclass
class TSPDConfig:
    arch: str = "lstm"          # the paper's shared recurrent cell; "mlp" = same features, no memory (Table 6)
    layers: int = 2             # 2-layer LSTM (Appendix A.3); Table 6 also tries 1 and 4
    hidden: int = 16            # Appendix A.3 (Table 8's budgets use 8 / 12 / 17 / 25)
    features: tuple[str, ...] = FEATURES   # any subset, in FEATURES order (Table 7)

    def __post_init__(self):
        self.features = tuple(self.features)
        if self.arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}, got {self.arch!r}")
        if self.layers < 1 or self.hidden < 1:
            raise ValueError("layers and hidden must be >= 1")
        unknown = set(self.features) - set(FEATURES)
        if unknown or not self.features:
            raise ValueError(f"features must be a non-empty subset of {FEATURES}, got {self.features}")
        self.features = tuple(f for f in FEATURES if f in self.features)


def features_without(groups: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The feature list of a Table 7 ablation, e.g. ``features_without(["position"])``."""
    drop = set()
    for g in groups:
        if g not in ABLATION_GROUPS:
            raise ValueError(f"unknown feature group {g!r}; choose from {sorted(ABLATION_GROUPS)}")
        drop.update(ABLATION_GROUPS[g])
    return tuple(f for f in FEATURES if f not in drop)


def stack_features(names: tuple[str, ...], conf, entropy, ewma, momentum, position, u) -> torch.Tensor:
    """Per-token feature vectors [..., len(names)] from same-shaped channels (position broadcasts)."""
    channels = dict(conf=conf, entropy=entropy, ewma=ewma, momentum=momentum, u=u)
    return torch.stack([torch.as_tensor(position, dtype=torch.float32).expand_as(conf) if n == "position"
                        else channels[n].float() for n in names], -1)


class TSPDNet(nn.Module):
    """The gate network f_psi + linear head (Eqs. 10-11) over standardised features.

    ``forward(r [T, N, F], state) -> (logits [T, N], state)``: T steps of N independent traces.
    """

    def __init__(self, config: TSPDConfig):
        super().__init__()
        self.config = config
        F, Hd = len(config.features), config.hidden
        # Standardisation of the inputs, fitted on the training traces (identity until then).
        self.register_buffer("mean", torch.zeros(F))
        self.register_buffer("std", torch.ones(F))
        if config.arch == "lstm":
            self.cell = nn.LSTM(F, Hd, num_layers=config.layers)
        else:
            dims = [F] + [Hd] * config.layers
            self.cell = nn.Sequential(*[m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.ReLU())])
        self.head = nn.Linear(Hd, 1)

    def forward(self, r: torch.Tensor, state=None):
        x = (r - self.mean) / self.std
        if self.config.arch == "lstm":
            h, state = self.cell(x, state)
        else:
            h = self.cell(x)
        return self.head(h)[..., 0], state


def build_tspd_net(config: dict) -> TSPDNet:
    arch = {k: config[k] for k in ("arch", "layers", "hidden", "features") if k in config}
    return TSPDNet(TSPDConfig(**arch))


# ------------------------------------------------------------------------------------------------
# The controller
# ------------------------------------------------------------------------------------------------
@dataclass
class _Runtime:
    batch: int = 0
    block_length: int = 0
    state: tuple | None = None
    probs: torch.Tensor | None = field(default=None, repr=False)   # [B, Lb] last pi (diagnostics)


class TSPD(Controller):
    name = "tspd"

    def __init__(self, weights: str | Path | None = None, name: str = "tspd", gate: float = 0.5,
                 schedule: bool = False, net: TSPDNet | None = None):
        if not 0.0 < gate < 1.0:
            raise ValueError(f"gate must lie in (0, 1), got {gate}")
        self.weights, self.stem_name, self.gate, self.schedule = weights, name, gate, schedule
        self.net = net.eval() if net is not None else None
        self.rt = _Runtime()
        self.step: GateStep | None = None

    @property
    def reads(self) -> frozenset:
        """The view fields its features come from (everything until its network is known)."""
        if self.net is None:
            return EVERYTHING
        return frozenset(READS[f] for f in self.net.config.features if f in READS) | ({"quota"} if self.schedule else set())

    def bind(self, model) -> None:
        loaded = self.net is None               # read from its files: shared between calls, never written to
        if loaded:
            self.net = load_net(model, self.stem_name, self.weights, "tspd", build_tspd_net)
        if next(self.net.parameters()).device != model.device:
            self.net.to(model.device)
        self.step = GateStep.shared(self.net) if loaded else GateStep(self.net)

    def reset(self, batch, gen_length, block_length, device):
        self.rt = _Runtime(batch=batch, block_length=block_length)

    def start_block(self, block):
        self.rt.state = None   # Eq. 10's hidden state starts afresh in every block

    @torch.no_grad()
    def gate_probs(self, view: StepView) -> torch.Tensor:
        """pi = sigmoid(z) for every block position, advancing the hidden state by one step: [B, Lb]."""
        B, Lb = view.masked.shape
        if self.step is None or self.step.net is not self.net:
            self.step = GateStep(self.net)
        r = stack_features(self.net.config.features, view.conf, view.entropy, view.ewma, view.momentum,
                           view.phi, view.u)
        dev = next(self.net.parameters()).device
        logits, self.rt.state = self.step(r.reshape(B * Lb, -1).to(dev), self.rt.state)
        self.rt.probs = torch.sigmoid(logits.reshape(B, Lb)).to(view.masked.device)
        return self.rt.probs

    def decide(self, view: StepView) -> Decision:
        fix = view.masked & (self.gate_probs(view) >= self.gate)        # Eq. 12, hard gate
        if self.schedule:
            fix |= top_k_mask(view.conf, view.masked & ~fix, view.quota, view.uniform_quota)
        return Decision(commit=fix, within_masked=True)
