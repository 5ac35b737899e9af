"""Trace sets and trained controller variants, cached by configuration (the ablation tables' registry).

Tables 6-11 of the paper each train TSPD differently (architecture, features, hidden size, the controller
that collected the traces, how many prompts, how hard they were) and then decode with it. This module
makes both stages reusable across notebooks the way :mod:`tspd.eval.experiments` does for decoding runs:

    TraceSpec  -> results/variants/traces-<key>.pt            (stage 1, :func:`tspd.training.traces.collect`)
    traces + ControllerTrainConfig -> results/variants/tspd-<key>.*     (stage 2, :func:`tspd.training.train_controller.train`)

A trace set is identified by its content (:func:`fingerprint`), so subsets made with :func:`subset`
(Table 10's data scale, Table 11's difficulty bins) and mixtures made with :func:`mix` (Table 9's mixed
controller) are cached as well. The returned weight stem goes into a run as
``RunConfig(controller="tspd", controller_kwargs={"weights": str(stem)})``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import torch

from tspd.decoding.controllers.weights import save_controller
from tspd.models.loaded import get_model, model_fingerprint
from tspd.provenance import REPO_ROOT
from tspd.models.loading import DEFAULT_MODEL, window
from tspd.provenance import settings_digest
from tspd.tasks.base import render_prompt
from tspd.training.traces import COLLECT, CONTROLLERS, collect, load_prompts, load_traces, own_traces, save_traces
from tspd.training.train_controller import ControllerTrainConfig, train, write_curve
from tspd.records.files import write_atomic

DEFAULT_DIR = REPO_ROOT / "results" / "variants"


def _dir(results_dir) -> Path:
    d = Path(results_dir) if results_dir else DEFAULT_DIR
    d.mkdir(parents=True, exist_ok=True)
    return d


@dataclass(frozen=True)
class TraceSpec:
    """One stage-1 collection (Appendix A.4). Defaults: EGP on the book model's traces split."""
    model: str = DEFAULT_MODEL       # embedded model name or local checkpoint directory
    prompts: str = ""                # tspd.training.traces.load_prompts source: arith-traces, flan, or a file
                                     # ("": the model's own task's traces split, tspd.training.traces.own_traces)
    n: int = 24                      # number of prompts (the paper: 66 FLAN tasks x 40 = 2,640)
    controller: str = "egp"          # egp | vanilla ("standard PD") | mixed (Table 9)
    gen_length: int | None = None    # None: the checkpoint's own (tspd.models.loading.decode_lengths)
    block_length: int | None = None
    steps: int | None = None         # None = gen_length (one token per step for the vanilla reference)
    cache: str = "none"
    batch_size: int = 8
    device: str = "cpu"
    dtype: str | None = None
    flan_source: str | None = None   # with prompts="flan": a local FLAN JSONL file or a datasets hub id
    chat: bool = False               # wrap prompts in the tokenizer's chat template (Instruct checkpoints)

    def __post_init__(self):
        if not self.prompts:
            object.__setattr__(self, "prompts", own_traces(self.model))          # frozen
        gen_length, block_length = window(self.model, self.gen_length, self.block_length)
        object.__setattr__(self, "gen_length", gen_length)    # frozen
        object.__setattr__(self, "block_length", block_length)
        if self.controller not in CONTROLLERS:
            raise ValueError(f"controller must be one of {CONTROLLERS}, got {self.controller!r}")
        if self.n < 2:
            raise ValueError(f"need at least 2 prompts (one for validation), got n={self.n}")

    @property
    def key(self) -> str:
        d = {k: v for k, v in dataclasses.asdict(self).items() if k != "batch_size"}
        d["policy"] = d.pop("controller")   # the spelling stored keys have (as tspd.eval.job.STORED_NAMES)
        for k, unset in (("flan_source", None), ("chat", False)):   # added later: unset keeps old keys
            if d[k] == unset:
                del d[k]
        d["weights"] = model_fingerprint(self.model)   # new weights, new traces (never a stale set)
        return settings_digest(d)


def fingerprint(traces: dict) -> str:
    """12 hex digits over the arrays of a trace set (what training sees)."""
    h = hashlib.sha256()
    for name in ("features", "labels", "masked", "offsets", "prompt_index", "block"):
        h.update(traces[name].contiguous().numpy().tobytes())
    return h.hexdigest()[:12]


def traces(spec: TraceSpec, results_dir=None, progress: bool = True) -> dict:
    """The trace set of ``spec``, collected once and then read from ``results/variants``."""
    path = _dir(results_dir) / f"traces-{spec.key}.pt"
    if path.exists():
        return load_traces(path)
    model = get_model(spec.model, spec.device, spec.dtype)
    prompts = load_prompts(spec.prompts, spec.n, spec.flan_source)
    prompts = [render_prompt(q, model.tokenizer, spec.chat) for q in prompts]
    decode = COLLECT.replace(gen_length=spec.gen_length, block_length=spec.block_length, steps=spec.steps,
                             cache=spec.cache)
    data = collect(model, prompts, decode, controller=spec.controller, batch_size=spec.batch_size, progress=progress,
                   meta=dict(model=spec.model, prompt_source=spec.prompts, spec=dataclasses.asdict(spec)))
    write_atomic(path, lambda tmp: save_traces(data, tmp))   # an interrupted collection leaves no torn file
    return data


def subset(data: dict, prompts, note: str = "") -> dict:
    """The block sequences of the given prompt indices only (a new trace dict; ``note`` goes to meta)."""
    keep = torch.as_tensor(list(prompts), dtype=torch.long)
    sel = torch.isin(data["prompt_index"], keep).nonzero()[:, 0].tolist()
    if not sel:
        raise ValueError("the selection keeps no block sequence")
    off = data["offsets"].tolist()
    steps = torch.cat([torch.arange(off[m], off[m + 1]) for m in sel])
    lengths = torch.tensor([off[m + 1] - off[m] for m in sel])
    out = {k: v for k, v in data.items() if k not in ("features", "labels", "masked", "offsets",
                                                         "prompt_index", "block", "meta")}
    out.update(features=data["features"][steps], labels=data["labels"][steps], masked=data["masked"][steps],
               offsets=torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)]),
               prompt_index=data["prompt_index"][sel], block=data["block"][sel],
               meta=dict(data.get("meta", {}), subset=note or f"{len(keep)} prompts", prompts=len(keep)))
    return out


def mix(first: dict, second: dict) -> dict:
    """Table 9's mixed traces: prompts of the first half from ``first``, the rest from ``second``.

    Both must cover the same prompts (same source and n, different controllers), so the mixture has
    every prompt once, half decoded by each controller (``collect(policy="mixed")`` alternates batches
    instead; this reuses two sets already collected).
    """
    n = int(max(first["prompt_index"].max(), second["prompt_index"].max())) + 1
    a, b = subset(first, range(n // 2)), subset(second, range(n // 2, n))
    shift = a["offsets"][-1]
    return {**{k: v for k, v in a.items() if k not in ("meta",)},
            "features": torch.cat([a["features"], b["features"]]),
            "labels": torch.cat([a["labels"], b["labels"]]),
            "masked": torch.cat([a["masked"], b["masked"]]),
            "offsets": torch.cat([a["offsets"], b["offsets"][1:] + shift]),
            "prompt_index": torch.cat([a["prompt_index"], b["prompt_index"]]),
            "block": torch.cat([a["block"], b["block"]]),
            "meta": dict({**first.get("meta", {}), "policy": "mixed"},   # (the key stored trace sets spell it with)
                         subset=f"prompts < {n // 2}: {first['meta'].get('policy')}, "
                                f"others: {second['meta'].get('policy')}")}


def stabilization_ratio(data: dict) -> torch.Tensor:
    """Per prompt, the fraction of masked (token, step) pairs already equal to the final token.

    The difficulty measure of the paper's Table 11 ("stabilization-step ratio"): lower = harder
    traces that settle later. Returns a float tensor indexed by prompt index (NaN if absent).
    """
    off = data["offsets"].tolist()
    n = int(data["prompt_index"].max()) + 1
    hits, counts = torch.zeros(n), torch.zeros(n)
    for m, p in enumerate(data["prompt_index"].tolist()):
        msk = data["masked"][off[m]:off[m + 1]]
        hits[p] += data["labels"][off[m]:off[m + 1]][msk].sum()
        counts[p] += msk.sum()
    return torch.where(counts > 0, hits / counts.clamp_min(1), torch.full_like(hits, float("nan")))


def controller(data: dict, cfg: ControllerTrainConfig, results_dir=None, progress: bool = False) -> Path:
    """Train ``cfg`` on a trace set once; returns the weight stem (``<stem>.safetensors`` / ``.json``).

    The learning curve is written beside it as ``<stem>.curve.json`` (the paper's Figure 5).
    """
    settings = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(cfg).items()}
    traces_id = fingerprint(data)
    stem = _dir(results_dir) / f"{cfg.kind}-{settings_digest({'traces': traces_id, 'train': settings})}"
    if stem.with_suffix(".safetensors").exists() and stem.with_suffix(".json").exists():
        return stem
    net, saved, curve = train(data, cfg, progress=progress)
    saved["traces"] = traces_id
    write_curve(stem, curve)
    save_controller(net, saved, stem)      # the .json last: its presence marks a finished variant
    return stem


@dataclass(frozen=True)
class Study:
    """Tables 6-11's two stages with one notebook's settings: trace sets (stage 1, Appendix A.4) and
    the TSPD controllers trained on them (stage 2, Appendix A.5), both cached in ``store``.

    The fields are the notebooks' parameters of the same names; 0 and "" mean the defaults, as in
    the parameter cells (the checkpoint's window, one token per step, the device's dtype).
    """
    model: str = DEFAULT_MODEL
    trace_source: str = ""               # tspd.training.traces.load_prompts source: arith-traces, flan, or a file
                                         # ("": the model's own task's traces split)
    trace_prompts: int = 24              # prompts traced (the paper: 2,640)
    trace_batch: int = 8                 # prompts decoded together while tracing
    flan_source: str = ""                # with trace_source flan: a local FLAN JSONL file or a hub id
    chat: bool = False                   # wrap the trace prompts in the tokenizer's chat template
    gen_length: int = 0
    block_length: int = 0
    steps: int = 0
    device: str = "cpu"
    dtype: str = ""
    epochs: int = 60                     # training epochs at most (early stopping ends sooner)
    train_batch: int = 16                # block sequences per optimiser step
    patience: int = 20                   # epochs without a better validation loss before stopping
    seed: int = 0
    store: str | Path | None = None      # where traces and controllers are cached (None: DEFAULT_DIR)

    @classmethod
    def from_parameters(cls, params: Mapping[str, Any], **changes) -> "Study":
        """A notebook's study, its fields read by name from the parameter cell: ``Study.from_parameters(
        globals(), store=...)`` (``changes`` win; fields without a parameter keep their defaults)."""
        return cls(**{**{f.name: params[f.name] for f in dataclasses.fields(cls) if f.name in params}, **changes})

    def traces(self, controller: str, n: int = 0) -> dict:
        """Stage 1: the traces of ``n`` (default ``trace_prompts``) prompts decoded by ``controller``."""
        spec = TraceSpec(model=self.model, prompts=self.trace_source, n=n or self.trace_prompts, controller=controller,
                         gen_length=self.gen_length or None, block_length=self.block_length or None,
                         steps=self.steps or None, batch_size=self.trace_batch, device=self.device,
                         dtype=self.dtype or None, flan_source=self.flan_source or None, chat=self.chat)
        return traces(spec, results_dir=self.store)

    def train(self, data: dict, **changes) -> Path:
        """Stage 2: a TSPD controller trained on ``data`` (this study's defaults plus ``changes``)."""
        cfg = ControllerTrainConfig(epochs=self.epochs, batch=self.train_batch, patience=self.patience,
                                    seed=self.seed, **changes)
        return controller(data, cfg, results_dir=self.store)


def controller_columns(stem: str | Path) -> dict:
    """What a trained controller achieved on its held-out prompts (gate at 0.5), as table columns:
    params, hidden size, features, validation blocks, best epoch, safe share, precision, recall, fix rate."""
    s = summary(stem)
    v = s["summary"]["val"]
    return {"params": s["params"], "hidden_size": s["hidden"], "features": ", ".join(s["features"]),
            "val blocks": s["summary"]["val_units"], "best epoch": s["summary"]["best_epoch"],
            "safe share": s["summary"]["fix_safe_fraction"], "precision": v["precision"],
            "recall": v["recall"], "fix rate": v["fix_rate"]}


def summary(stem: str | Path) -> dict:
    """The saved config of a trained variant (params, best epoch, validation precision/recall...)."""
    return json.loads(Path(stem).with_suffix(".json").read_text())


def curve(stem: str | Path) -> dict:
    return json.loads(Path(f"{stem}.curve.json").read_text())


__all__ = ["TraceSpec", "Study", "traces", "subset", "mix", "stabilization_ratio", "controller",
           "controller_columns", "fingerprint", "summary", "curve", "DEFAULT_DIR"]
