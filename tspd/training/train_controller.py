"""Stage 2: train a learned controller on collected traces (paper Section 4.1, Appendix A.5).

``--kind tspd``: the gate network of :mod:`tspd.decoding.controllers.tspd` runs over each per-(prompt, block)
sequence of steps, one trace per block position, and is trained with weighted binary cross-entropy
on the gate logits (Eq. 13), w1 / w0 set by inverse class frequency on the training split, over the
token-steps where a decision is made (positions still masked). AdamW (lr 1e-3, weight decay 1e-2),
channel dropout p = 0.1 on the features and Gaussian noise sigma = 0.01 on the confidence-valued
features (conf, EWMA, momentum), early stopping on a 10 % validation split (split by prompt, so no
prompt is on both sides). The straight-through estimator of Section 3.2 is the identity here: the
hard decisions never feed back into offline traces, so the gradient flows through the logits.

CE and the features (``--ce``): ``on`` trains on CE's confidence and u, ``off`` on the raw confidence
with u = 0 (the paper's "CE disabled" convention), ``mixed`` (TSPD default) draws one of the two per
sequence and step of training, so the one shipped controller serves decoding with and without CE.

``--kind learn2pd``: Learn2PD's filter, Linear(32, 32) - ReLU - Linear(32, 32), on every step's
vector of the block's confidences (all positions, zero-padded to 32) with Learn2PD's multi-label
targets is_correct = [argmax == final token] at every block position. Learn2PD's own recipe is the
default for this kind: unweighted BCE, AdamW lr 3e-3, full-batch, raw confidences, no augmentation.

Writes ``<out>.safetensors`` + ``<out>.json`` (architecture, settings, validation metrics) and the
learning curve ``<out>.curve.json`` (the paper's Figure 5). Deterministic for a given ``--seed``.

    python -m tspd train-controller --traces traces.pt --kind tspd --out tspd/zoo/tiny-arith/controllers/tspd

(the command: :mod:`tspd.commands.train_controller`)
"""
from __future__ import annotations

import copy
import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from tspd.decoding.controllers.learn2pd import WIDTH, Learn2PDNet
from tspd.decoding.controllers.tspd import FEATURES, TSPDConfig, TSPDNet, stack_features
from tspd.decoding.controllers.weights import LEARNED, save_controller, stem_of
from tspd.models.loading import CheckpointError, weights_hash
from tspd.training.traces import CHANNELS, load_traces

KINDS = LEARNED                 # the learned controllers (tspd.decoding.controllers.weights)
CE_MODES = ("on", "off", "mixed")
CONFIDENCE_FEATURES = ("conf", "ewma", "momentum")   # the channels that get Gaussian noise


@dataclass
class ControllerTrainConfig:
    kind: str = "tspd"              # the paper's TSPD gate (Section 3.2) or the Learn2PD filter
    arch: str = "lstm"              # TSPD cell: lstm (the paper) or mlp (Table 6)
    layers: int = 2                 # recurrent layers (App. A.3: 2; Table 6 varies it)
    hidden: int = 16                # hidden units (App. A.3: 16; Table 8 varies it)
    features: tuple[str, ...] = FEATURES   # the gate's inputs r (App. A.3; Table 7 drops some)
    ce: str | None = None           # features with CE on / off / mixed (default: mixed for tspd, off for learn2pd)
    epochs: int | None = None       # default 5000 (tspd, Appendix A.5) / 40000 (learn2pd, its recipe); early stopping may end sooner
    patience: int | None = None     # epochs without a better validation loss: default 30 (tspd) / 300 (learn2pd)
    lr: float | None = None         # AdamW learning rate: default 1e-3 (the paper, tspd) / 3e-3 (learn2pd)
    weight_decay: float = 1e-2      # AdamW weight decay (Appendix A.5)
    batch: int | None = None        # units per optimiser step, 0 = full batch: default 256 sequences (tspd) / 0 (learn2pd)
    dropout: float | None = None    # feature-channel dropout on r: default 0.1 (tspd) / 0 (learn2pd)
    noise: float | None = None      # Gaussian sigma on the confidence features: default 0.01 (tspd) / 0 (learn2pd)
    class_weight: str | None = None  # BCE class weighting: default inverse (tspd, Appendix A.5) / none (learn2pd)
    val_fraction: float = 0.1       # prompts held out for validation and early stopping (Appendix A.5's 10 %)
    seed: int = 0                   # initialisation, split and augmentation seed

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        tspd = self.kind == "tspd"
        defaults = dict(ce="mixed" if tspd else "off", lr=1e-3 if tspd else 3e-3, batch=256 if tspd else 0,
                        epochs=5000 if tspd else 40_000, patience=30 if tspd else 300,
                        dropout=0.1 if tspd else 0.0, noise=0.01 if tspd else 0.0,
                        class_weight="inverse" if tspd else "none")
        for k, v in defaults.items():
            if getattr(self, k) is None:
                setattr(self, k, v)
        if self.ce not in CE_MODES:
            raise ValueError(f"ce must be one of {CE_MODES}, got {self.ce!r}")
        if self.class_weight not in ("inverse", "none"):
            raise ValueError(f"class_weight must be inverse or none, got {self.class_weight!r}")
        if tspd:
            self.features = TSPDConfig(self.arch, self.layers, self.hidden, self.features).features


# ------------------------------------------------------------------------------------------------
# Data: trace file -> padded units + a function that composes features for a CE choice
# ------------------------------------------------------------------------------------------------
@dataclass
class Units:
    raw: torch.Tensor       # tspd: [M, S, Lb, C] sequences of steps; learn2pd: [N, Lb, C] single steps
    labels: torch.Tensor    # [..., Lb] float
    weight: torch.Tensor    # [..., Lb] float: 1 where the loss counts
    group: torch.Tensor     # [M] or [N]: prompt index (for the train/validation split)


def make_units(traces: dict, kind: str) -> Units:
    feats, labels, masked = traces["features"], traces["labels"].float(), traces["masked"]
    if list(traces["channels"]) != list(CHANNELS):
        raise ValueError(f"trace channels {traces['channels']} != expected {list(CHANNELS)}")
    offsets, prompt = traces["offsets"].tolist(), traces["prompt_index"]
    if kind == "learn2pd":
        seq_of_step = torch.repeat_interleave(torch.arange(len(offsets) - 1), torch.tensor(offsets).diff())
        return Units(feats, labels, torch.ones_like(labels), prompt[seq_of_step])
    M, S = len(offsets) - 1, max(b - a for a, b in zip(offsets, offsets[1:]))
    Lb, C = feats.shape[1], feats.shape[2]
    raw, y, w = torch.zeros(M, S, Lb, C), torch.zeros(M, S, Lb), torch.zeros(M, S, Lb)
    for m, (a, b) in enumerate(zip(offsets, offsets[1:])):
        raw[m, :b - a], y[m, :b - a], w[m, :b - a] = feats[a:b], labels[a:b], masked[a:b].float()
    return Units(raw, y, w, prompt)


def compose(raw: torch.Tensor, names: tuple[str, ...], use_ce: torch.Tensor) -> torch.Tensor:
    """Controller features from raw channels; ``use_ce`` [units] bool picks CE's conf/u per unit."""
    ch = {n: raw[..., i] for i, n in enumerate(CHANNELS)}
    sel = use_ce.view(-1, *[1] * (raw.dim() - 2))
    conf = torch.where(sel, ch["ce_conf"], ch["conf"])
    u = torch.where(sel, ch["u"], torch.zeros_like(ch["u"]))
    Lb = raw.shape[-2]
    phi = torch.arange(Lb, dtype=torch.float32) / max(Lb - 1, 1)
    return stack_features(names, conf, ch["entropy"], ch["ewma"], ch["momentum"], phi, u)


def split(group: torch.Tensor, fraction: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit indices (train, validation), whole prompts on one side."""
    prompts = group.unique()
    g = torch.Generator().manual_seed(seed)
    perm = prompts[torch.randperm(len(prompts), generator=g)]
    n_val = max(1, round(fraction * len(prompts))) if len(prompts) > 1 else 0
    val = torch.isin(group, perm[:n_val])
    return (~val).nonzero()[:, 0], val.nonzero()[:, 0]


# ------------------------------------------------------------------------------------------------
# Model + loss
# ------------------------------------------------------------------------------------------------
def build_net(cfg: ControllerTrainConfig):
    if cfg.kind == "tspd":
        return TSPDNet(TSPDConfig(cfg.arch, cfg.layers, cfg.hidden, cfg.features))
    return Learn2PDNet(WIDTH)


def unit_logits(net, kind: str, x: torch.Tensor) -> torch.Tensor:
    """tspd: x [m, S, Lb, F] -> [m, S, Lb] (LSTM over S); learn2pd: x [n, Lb, 1] -> [n, Lb]."""
    if kind == "learn2pd":
        return net(x[..., 0])
    m, S, Lb, Fd = x.shape
    logits, _ = net(x.permute(1, 0, 2, 3).reshape(S, m * Lb, Fd))
    return logits.reshape(S, m, Lb).permute(1, 0, 2)


def weighted_bce(logits, y, w, w_pos: float, w_neg: float) -> torch.Tensor:
    """Appendix A.5: -w1 y log pi - w0 (1 - y) log(1 - pi), averaged over the counted token-steps."""
    cw = w * (y * w_pos + (1 - y) * w_neg)
    return (F.binary_cross_entropy_with_logits(logits, y, reduction="none") * cw).sum() / w.sum().clamp_min(1)


def augment(x: torch.Tensor, names: tuple[str, ...], dropout: float, noise: float, g: torch.Generator) -> torch.Tensor:
    if noise > 0:
        sigma = torch.tensor([noise if n in CONFIDENCE_FEATURES else 0.0 for n in names])
        x = x + torch.randn(x.shape, generator=g) * sigma
    if dropout > 0:
        x = x * (torch.rand(x.shape, generator=g) >= dropout)   # zero = "channel missing", no rescaling
    return x


@torch.no_grad()
def validation_metrics(net, kind, units: Units, idx, names, ce_modes, w_pos, w_neg, gate: float) -> dict:
    """Validation loss and decision quality of the hard gate, averaged over the CE modes trained for."""
    out = {}
    for mode in ce_modes:
        use = torch.full((len(idx),), mode == "on")
        x = compose(units.raw[idx], names, use)
        logits = unit_logits(net, kind, x)
        y, w = units.labels[idx], units.weight[idx]
        pred = (torch.sigmoid(logits) >= gate).float() * w
        tp, fp = (pred * y).sum(), (pred * (1 - y)).sum()
        pos = (y * w).sum()
        out[mode] = dict(loss=float(weighted_bce(logits, y, w, w_pos, w_neg)),
                         precision=float(tp / (tp + fp).clamp_min(1)), recall=float(tp / pos.clamp_min(1)),
                         fix_rate=float(pred.sum() / w.sum().clamp_min(1)))
    return {k: sum(v[k] for v in out.values()) / len(out) for k in ("loss", "precision", "recall", "fix_rate")} | {"by_ce": out}


def train(traces: dict, cfg: ControllerTrainConfig, progress: bool = True):
    """Train; returns (net with the best validation weights, saved-config dict, learning curve dict).

    Seeded by ``cfg.seed``; torch's global random state is as it was afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        return _train(traces, cfg, progress)


def _train(traces: dict, cfg: ControllerTrainConfig, progress: bool):
    g = torch.Generator().manual_seed(cfg.seed)
    kind = cfg.kind
    names = cfg.features if kind == "tspd" else ("conf",)
    units = make_units(traces, kind)
    tr, va = split(units.group, cfg.val_fraction, cfg.seed)
    if len(va) == 0:
        va = tr
    ce_modes = {"on": ("on",), "off": ("off",), "mixed": ("on", "off")}[cfg.ce]
    net = build_net(cfg)
    gate = 0.5 if kind == "tspd" else 0.96
    # class weights and input standardisation from the training split only
    y_tr, w_tr = units.labels[tr], units.weight[tr]
    n_pos, n_all = float((y_tr * w_tr).sum()), float(w_tr.sum())
    n_neg = n_all - n_pos
    w_pos, w_neg = ((n_all / (2 * max(n_pos, 1)), n_all / (2 * max(n_neg, 1))) if cfg.class_weight == "inverse"
                    else (1.0, 1.0))
    if kind == "tspd":
        _standardise(net, units, tr, names, ce_modes)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    batch = cfg.batch if cfg.batch and cfg.batch > 0 else len(tr)
    curve = dict(epoch=[], train_loss=[], val_loss=[], val_precision=[], val_recall=[], val_fix_rate=[], seconds=[])
    best, best_state, best_epoch, since = math.inf, copy.deepcopy(net.state_dict()), 0, 0
    t0 = time.perf_counter()
    from tqdm.auto import tqdm
    bar = tqdm(range(1, cfg.epochs + 1), desc=f"train {kind}", disable=not progress, unit="epoch")
    for epoch in bar:
        net.train()
        perm = tr[torch.randperm(len(tr), generator=g)]
        total, count = 0.0, 0.0
        for i in range(0, len(perm), batch):
            idx = perm[i:i + batch]
            use = (torch.rand(len(idx), generator=g) < 0.5) if cfg.ce == "mixed" else torch.full((len(idx),), cfg.ce == "on")
            x = augment(compose(units.raw[idx], names, use), names, cfg.dropout, cfg.noise, g)
            loss = weighted_bce(unit_logits(net, kind, x), units.labels[idx], units.weight[idx], w_pos, w_neg)
            opt.zero_grad()
            loss.backward()
            opt.step()
            n = float(units.weight[idx].sum())
            total, count = total + loss.item() * n, count + n
        net.eval()
        val = validation_metrics(net, kind, units, va, names, ce_modes, w_pos, w_neg, gate)
        for k, v in (("epoch", epoch), ("train_loss", total / max(count, 1)), ("val_loss", val["loss"]),
                     ("val_precision", val["precision"]), ("val_recall", val["recall"]),
                     ("val_fix_rate", val["fix_rate"]), ("seconds", time.perf_counter() - t0)):
            curve[k].append(v)
        bar.set_postfix(train=f"{curve['train_loss'][-1]:.4f}", val=f"{val['loss']:.4f}")
        if val["loss"] < best - 1e-6:
            best, best_state, best_epoch, since = val["loss"], copy.deepcopy(net.state_dict()), epoch, 0
        else:
            since += 1
            if since >= cfg.patience:
                break
    bar.close()
    net.load_state_dict(best_state)
    net.eval()
    final = validation_metrics(net, kind, units, va, names, ce_modes, w_pos, w_neg, gate)
    summary = dict(best_epoch=best_epoch, epochs_run=len(curve["epoch"]), val=final,
                   train_units=len(tr), val_units=len(va), class_weights=[w_neg, w_pos],
                   fix_safe_fraction=n_pos / max(n_all, 1), traces=traces.get("meta", {}))
    curve.update(best_epoch=best_epoch, kind=kind)
    return net, _saved_config(cfg, net, names, gate, summary), curve


def _standardise(net, units: Units, tr: torch.Tensor, names: tuple[str, ...], ce_modes: tuple[str, ...]) -> None:
    """Set the gate network's input standardisation from the training split's counted token-steps (positions
    still masked), over the features of every CE mode trained for."""
    counted = units.weight[tr].bool()
    flat = torch.cat([compose(units.raw[tr], names, torch.full((len(tr),), m == "on"))[counted] for m in ce_modes])
    net.mean.copy_(flat.mean(0))
    net.std.copy_(flat.std(0).nan_to_num(1.0).clamp_min(1e-3))


def _saved_config(cfg: ControllerTrainConfig, net, names: tuple[str, ...], gate: float, summary: dict) -> dict:
    """The controller's saved config (``<out>.json``): its architecture, gate threshold, size, the training
    settings and the validation summary."""
    settings = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(cfg).items()}
    params = sum(p.numel() for p in net.parameters())
    if cfg.kind == "tspd":
        return dict(kind="tspd", arch=cfg.arch, layers=cfg.layers, hidden=cfg.hidden, features=list(names),
                    gate=gate, params=params, train=settings, summary=summary)
    return dict(kind="learn2pd", width=WIDTH, accept=gate, params=params, train=settings, summary=summary)


def train_and_save(traces_path: str | Path, cfg: ControllerTrainConfig, out: str | Path, progress: bool = True):
    """Train on the trace file ``traces_path`` and save the controller at the stem ``out`` (``<out>.safetensors``,
    ``.json`` and the learning curve ``.curve.json``); returns (the stem written, the saved config)."""
    traces = load_traces(traces_path)
    net, saved, curve = train(traces, cfg, progress=progress)
    saved["traces_file"] = str(traces_path)
    saved["model"] = traces["meta"].get("model")
    try:   # a controller reads its model's confidence dynamics and belongs to it: the model's whole sha256
        saved["model_sha256"] = weights_hash(saved["model"], digits=64)
    except CheckpointError:   # a model not on this machine
        saved["model_sha256"] = None
    stem = save_controller(net, saved, stem_of(out, cfg.kind))
    write_curve(stem, curve)
    return stem, saved


CURVE_POINTS = 2000   # epochs a stored learning curve keeps at most (Learn2PD may run 30,000: 4 MB in full)


def thinned(curve: dict, most: int = CURVE_POINTS) -> dict:
    """The learning curve at most ``most`` evenly spaced epochs, always with the first, the best and the last
    (``epoch`` keeps the true epoch numbers; ``epochs_run`` the count)."""
    n = len(curve["epoch"])
    stride = -(-n // most)
    best = curve["epoch"].index(curve["best_epoch"]) if curve.get("best_epoch") in curve["epoch"] else n - 1
    keep = sorted(set(range(0, n, stride)) | {best, n - 1}) if n else []
    lists = {k: [v[i] for i in keep] for k, v in curve.items() if isinstance(v, list) and len(v) == n}
    return {**curve, **lists, "epochs_run": n}


def write_curve(stem: str | Path, curve: dict) -> None:
    """``<stem>.curve.json``: the learning curve (the paper's Figure 5), thinned to :data:`CURVE_POINTS` epochs."""
    Path(f"{stem}.curve.json").write_text(json.dumps(thinned(curve)) + "\n")
