"""The run registry the notebooks share: one configuration is measured once, then read back.

A :class:`RunConfig` names everything that changes what a benchmark run produces (model, task,
decoding policy and its settings, CE, cache, lengths, seed, device, dtype, batch size). Its ``key``
is a short hash of those fields. :func:`run` keeps the results of one key in ``results_dir``::

    <key>.jsonl          per-sample rows written by the evaluation harness (:mod:`tspd.eval.harness`):
                         id, correct, output, nfe, seconds, gen_tokens, reason, extracted, batch timing
    <key>.summary.json   the harness's summary of the last call (its accuracy is a fraction)
    <key>.json           sidecar: the RunConfig, the device name(s), the checkpoint fingerprint,
                         versions

If the file already holds every requested sample, nothing is computed and no model is loaded; if it
holds some, only the missing ones are (a killed run resumes where it stopped). The computing is done
by ``tspd.eval.harness.run``, the same code as ``python -m tspd eval``, so a GPU run started from the
shell with ``--out results/runs/<key>.jsonl`` (see :func:`eval_command`) fills the file a notebook
reads. ``limit`` is deliberately not part of the key: the first 50 samples are a prefix of the whole
split, so a larger ``limit`` extends the same file and a smaller one reads a prefix of it.

:attr:`RunResult.summary` follows the paper (Appendix A.1): ``tps`` = sum of B * L_gen over batches /
their wall time (each session's first batch is the warm-up and is left out when others exist),
``tps_nonpad`` counts only tokens that are not EOS/EoT/pad, and ``accuracy`` is in **percent**, the
paper's unit (the harness's own summary file stores a fraction). Runs computed with ``profile=True``
(every row timed by phase) also have ``forward_ms``, ``controller_pct_of_forward`` and
``ce_pct_of_forward`` (:func:`tspd.eval.results.phase_shares`).

Staleness: the sidecar records a fingerprint of the checkpoint (config.json and the weight files'
sizes and first/last MiB). When the checkpoint behind a model name changes (e.g. the embedded model
is retrained), the old files are renamed ``<key>.stale-<time>.*`` and the run is recomputed. Changes
to tspd's own code are not detected: pass ``force=True`` (or delete the files) after changing a policy.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import platform
import shlex
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from tspd.eval import harness as evaluate
from tspd.decoding.config import DecodeConfig, canonical
from tspd.decoding.loop import generate
from tspd.models.loading import load_model, resolve_path
from tspd.provenance import REPO_ROOT, device_name, git_revision, local, portable
from tspd.eval.results import ResultsError, ResultsFile, summarize
from tspd.eval.tasks import get_task
from tspd.validate import UsageError

DEFAULT_RESULTS_DIR = REPO_ROOT / "results" / "runs"
KEY_VERSION = 1          # bump when the meaning of stored results changes (all keys change with it)
MAX_MODELS = 2           # models kept loaded per process (an 8B model is 16 GB in bf16)

# fields that do not change what a sample's result is, so they stay out of the key
_NOT_IN_KEY = ("limit",)


# Decoding fields every key names (KEY_VERSION 1); the rest of DecodeConfig enters a key only when it
# differs from its default, so keys made before DecodeConfig existed still name the same runs.
_KEYED_DECODE = ("policy", "policy_kwargs", "ce", "ce_kwargs", "cache", "gen_length", "block_length", "steps")
_OPTIONAL_DECODE = ("temperature", "confidence_dtype", "fast")
_DECODE_FIELDS = {f.name for f in dataclasses.fields(DecodeConfig)}


@dataclass(frozen=True, init=False)
class RunConfig:
    """One benchmark run: a :class:`DecodeConfig` plus what it runs on. Defaults: the embedded model
    on its synthetic task, on the CPU.

    Decoding settings may be given whole (``decode=DecodeConfig(...)``) or field by field
    (``RunConfig(policy="tspd", ce=True)``), and read through (``config.cache``). The window is
    resolved on construction (None: the checkpoint's own; ``steps`` None: ``gen_length``), ``limit``
    None or 0 means the whole test split and ``dtype`` None means float32 on the CPU and bfloat16
    elsewhere (what :func:`tspd.load_model` picks), so that equal runs have equal keys. Policy and CE
    settings must be JSON-serialisable: they are part of the key.
    """
    model: str = "tiny-arith"          # embedded model name or local checkpoint directory
    task: str = "arith"                # tspd.eval.tasks name: arith, gsm8k, math, math500, humaneval, mbpp
    decode: DecodeConfig = field(default_factory=DecodeConfig)  # how to decode (policy, CE, cache, window)
    limit: int | None = None           # first n samples of the test split (not part of the key)
    seed: int = 0                      # sampling seed (matters only at temperature > 0)
    device: str = "cpu"
    dtype: str | None = None
    batch_size: int = 1                # prompts per generate() call

    def __init__(self, model: str = "tiny-arith", task: str = "arith", decode: DecodeConfig | None = None,
                 limit: int | None = None, seed: int = 0, device: str = "cpu", dtype: str | None = None,
                 batch_size: int = 1, **decode_fields):
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        unknown = set(decode_fields) - _DECODE_FIELDS - {"threshold"}
        if unknown:
            raise TypeError(f"RunConfig has no field {', '.join(sorted(unknown))}")
        model = str(model).rstrip("/") or str(model)
        if "policy_kwargs" in decode_fields:   # a stored config names repository files <repo>/...: this clone's
            decode_fields["policy_kwargs"] = local(decode_fields["policy_kwargs"])
        decode = DecodeConfig.of(decode, **decode_fields)
        if not isinstance(decode.policy, str) or not isinstance(decode.ce, bool):
            raise UsageError("a stored run names its policy and CE by settings, not by ready instances")
        canonical(decode.policy_kwargs, "policy_kwargs")
        canonical(decode.ce_kwargs, "ce_kwargs")
        set_("model", model)
        set_("task", task)
        set_("decode", decode.resolved(model))
        set_("limit", None if not limit else int(limit))
        set_("seed", seed)
        set_("device", str(torch.device(device)))
        if dtype is None:
            dtype = "float32" if torch.device(device).type == "cpu" else "bfloat16"
        set_("dtype", str(dtype).replace("torch.", ""))
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        set_("batch_size", batch_size)
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"limit must be >= 0, got {self.limit}")

    def __getattr__(self, name: str):
        """Decoding settings read through: ``config.policy`` is ``config.decode.policy``."""
        if name in _DECODE_FIELDS:
            return getattr(object.__getattribute__(self, "decode"), name)
        raise AttributeError(f"RunConfig has no attribute {name!r}")

    def __hash__(self) -> int:   # the dict fields are not hashable; the key is
        return hash((self.key, self.limit))

    def to_dict(self) -> dict:
        """Flat settings: the run's fields and the decoding's (as every stored sidecar has them)."""
        d = {"model": self.model, "task": self.task}
        d.update({k: getattr(self.decode, k) for k in _KEYED_DECODE})
        defaults = DecodeConfig()
        d.update({k: getattr(self.decode, k) for k in _OPTIONAL_DECODE
                  if getattr(self.decode, k) != getattr(defaults, k)})
        d.update(limit=self.limit, seed=self.seed, device=self.device, dtype=self.dtype, batch_size=self.batch_size)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        names = {f.name for f in dataclasses.fields(cls)} | _DECODE_FIELDS
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def key(self) -> str:
        """12 hex digits of a SHA-256 over the canonical JSON of every field except ``limit``."""
        d = {k: v for k, v in self.to_dict().items() if k not in _NOT_IN_KEY}
        d["policy_kwargs"] = portable(d["policy_kwargs"])     # the same key in every clone
        d["_v"] = KEY_VERSION
        blob = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def replace(self, **changes) -> "RunConfig":
        """A copy with ``changes`` (run or decoding fields); a new ``gen_length`` brings its own default
        ``steps`` (one token per step) unless ``steps`` is given or this config's steps were not the
        default."""
        decode_changes = {k: changes.pop(k) for k in list(changes) if k in _DECODE_FIELDS or k == "threshold"}
        decode = DecodeConfig.of(changes.pop("decode", self.decode), **decode_changes)
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "decode"}
        return RunConfig(**{**own, **changes}, decode=decode)

    @property
    def label(self) -> str:
        """A short human-readable name: ``arith/fast-dllm+ce/dual/L128``."""
        return f"{self.task}/{self.policy}{'+ce' if self.ce else ''}/{self.cache}/L{self.gen_length}"


def ours_label(model: str, device: str, n: int | None) -> str:
    """``ours (tiny-arith, cpu, n=50)``: the provenance of numbers measured here."""
    name = Path(str(model)).name or str(model)
    return f"ours ({name}, {device}, n={n if n is not None else '?'})"


@dataclass
class RunResult:
    """The per-sample rows of one run (in the split's order) and their summary."""
    config: RunConfig
    samples: list[dict]
    summary: dict
    path: Path
    device_name: str
    computed: int = 0                  # samples computed by this call
    reused: int = 0                    # samples read from the results file

    @property
    def key(self) -> str:
        return self.config.key

    @property
    def label(self) -> str:
        """``ours (model, device, n=...)``, the provenance string for tables."""
        return ours_label(self.config.model, self.device_name, self.summary.get("n"))

    def row(self, **extra) -> dict:
        """The summary as a table row with the setting, for :func:`tspd.book.reported.side_by_side`."""
        c = self.config
        setting = {"model": c.model, "task": c.task, "gen_length": c.gen_length, "block_length": c.block_length,
                   "policy": c.policy, "ce": c.ce, "cache": c.cache, "device": self.device_name}
        return {**extra, **self.summary, "setting": setting, "key": self.key}


# ------------------------------------------------------------------------------------------------
# Models, tasks, devices
# ------------------------------------------------------------------------------------------------
_MODELS: "OrderedDict[tuple, Any]" = OrderedDict()
_TASKS: dict[tuple, Any] = {}


def get_model(model: str, device: str = "cpu", dtype: str | None = None):
    """A loaded model, cached per process by (model, device, dtype); the least recent is evicted."""
    key = (model, device, dtype)
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    while len(_MODELS) >= MAX_MODELS:
        _MODELS.popitem(last=False)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    _MODELS[key] = load_model(model, device=device, dtype=dtype)
    return _MODELS[key]


def clear_models() -> None:
    _MODELS.clear()


def _task(name: str):
    if name not in _TASKS:
        _TASKS[name] = get_task(name)
    return _TASKS[name]


def model_fingerprint(model: str) -> str | None:
    """A short hash of a checkpoint's config.json and weight files (size + first/last MiB), or None."""
    try:
        path = resolve_path(model)
    except Exception:
        return None
    h = hashlib.sha256()
    files = sorted(p for p in path.iterdir() if p.name == "config.json" or p.suffix == ".safetensors")
    if not files:
        return None
    for p in files:
        size = p.stat().st_size
        h.update(f"{p.name}:{size}".encode())
        with open(p, "rb") as f:
            h.update(f.read(1 << 20))
            if size > 2 << 20:
                f.seek(-(1 << 20), os.SEEK_END)
            h.update(f.read())          # the rest of a file up to 2 MiB, else its last MiB
    return h.hexdigest()[:16]


# ------------------------------------------------------------------------------------------------
# The harness
# ------------------------------------------------------------------------------------------------
def harness_args(config: RunConfig, out: str | Path, profile: bool = False) -> argparse.Namespace:
    """The ``python -m tspd eval`` arguments of ``config`` (what :func:`tspd.eval.harness.run` takes);
    ``profile`` is ``--profile`` (phase times in the rows; not part of the configuration).

    CE settings travel as a dict in ``ce`` (:class:`DecodeConfig` accepts ``ce=dict``); the eval
    command line has no flag for them yet.
    """
    d = config.decode
    return argparse.Namespace(
        task=config.task, model=config.model, policy=d.policy,
        policy_arg=[f"{k}={json.dumps(v)}" for k, v in d.policy_kwargs.items()],
        ce=dict(d.ce_kwargs) if d.ce and d.ce_kwargs else d.ce,
        cache=d.cache, gen_length=d.gen_length, block_length=d.block_length, steps=d.steps, threshold=None,
        temperature=d.temperature, confidence_dtype=d.confidence_dtype, fast=d.fast, seed=config.seed,
        limit=config.limit, batch_size=config.batch_size, device=config.device, dtype=config.dtype, chat="auto",
        data_dir=None, source=None, grade_workers=2, controller=None, truncate_prompt=False, profile=profile,
        out=str(out))


def eval_command(config: RunConfig, results_dir: str | Path | None = None) -> str:
    """The shell command that fills this config's results file (for runs outside a notebook)."""
    a = harness_args(config, Path(results_dir or DEFAULT_RESULTS_DIR) / f"{config.key}.jsonl")
    if isinstance(a.ce, dict):
        raise ValueError("CE settings (ce_kwargs) cannot be given on the eval command line yet; use run()")
    parts = ["python -m tspd eval", f"--task {a.task}", f"--model {shlex.quote(a.model)}", f"--policy {a.policy}"]
    parts += [f"--policy-arg {shlex.quote(x)}" for x in a.policy_arg]
    parts += ["--ce"] if a.ce else []
    parts += [f"--cache {a.cache}", f"--gen-length {a.gen_length}", f"--block-length {a.block_length}",
              f"--steps {a.steps}", f"--seed {a.seed}", f"--batch-size {a.batch_size}", f"--device {a.device}",
              f"--dtype {a.dtype}"]
    parts += [f"--temperature {a.temperature}"] if a.temperature else []
    parts += [f"--confidence-dtype {a.confidence_dtype}"] if a.confidence_dtype != "float32" else []
    parts += ["--fast"] if a.fast else []
    parts += [f"--limit {a.limit}"] if a.limit else []
    return " ".join(parts + [f"--out {shlex.quote(a.out)}"])


def _cached_seam() -> "evaluate.Seam":
    """The harness's (load_model, generate) seam, with models cached per process."""
    return (lambda name, device="cpu", dtype=None: get_model(name, device, dtype)), generate


def _to_result(config: RunConfig, rows: list[dict], path: Path, name: str, computed: int) -> "RunResult":
    summary = summarize(rows)
    out = {"n": summary["n"],
           "accuracy": None if summary["accuracy"] is None else 100.0 * summary["accuracy"],
           "nfe_mean": summary["nfe_mean"], "tps": summary["tps"], "tps_nonpad": summary["tps_nonpad"],
           "gen_seconds": summary["gen_seconds"]}
    out.update({k: summary[k] for k in ("forward_ms", "controller_pct_of_forward", "ce_pct_of_forward")
                if k in summary})
    return RunResult(config, rows, out, path, name, computed, len(rows) - computed)


# ------------------------------------------------------------------------------------------------
# Results files
# ------------------------------------------------------------------------------------------------
def _paths(results_dir: Path, key: str) -> dict[str, Path]:
    return {"rows": results_dir / f"{key}.jsonl", "meta": results_dir / f"{key}.json",
            "summary": results_dir / f"{key}.summary.json"}


def _stored(path: Path) -> dict[str, dict]:
    """Stored rows by id (the harness's reader: a torn last line is dropped)."""
    return {r["id"]: r for r in ResultsFile(path).load()}


def _retire(results_dir: Path, key: str) -> None:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for p in _paths(results_dir, key).values():
        if p.exists():
            p.rename(p.with_name(p.name.replace(key, f"{key}.stale-{stamp}", 1)))


def load_result(config: RunConfig, results_dir: str | Path | None = None, task=None) -> "RunResult | None":
    """The stored result of ``config`` if every requested sample is there; never computes."""
    paths = _paths(Path(results_dir or DEFAULT_RESULTS_DIR), config.key)
    if not paths["rows"].exists():
        return None
    rows = _stored(paths["rows"])
    samples = (task or _task(config.task)).samples(config.limit)
    if any(s["id"] not in rows for s in samples):
        return None
    meta = json.loads(paths["meta"].read_text()) if paths["meta"].exists() else {}
    name = (meta.get("devices") or ["unknown"])[-1]
    return _to_result(config, [rows[s["id"]] for s in samples], paths["rows"], name, 0)


def run(config: RunConfig, progress: bool = True, results_dir: str | Path | None = None,
        force: bool = False, seam: "evaluate.Seam | None" = None, task=None, profile: bool = False) -> "RunResult":
    """Results of ``config``: read back what is stored, compute (and append) what is missing.

    ``progress`` False silences the harness's progress bar (it draws one only on a terminal);
    ``force`` retires the stored files and recomputes everything. ``seam`` (``(load_model, generate)``,
    default: the package's, with models kept loaded) and ``task`` (default: ``get_task(config.task)``)
    are what the harness decodes with and on. ``profile`` stores each computed row's phase times
    (``forward_seconds``, ``controller_seconds``, ``ce_seconds``; the harness's ``--profile``); rows
    read back keep whatever they were stored with.
    """
    results_dir = Path(results_dir or DEFAULT_RESULTS_DIR)
    results_dir.mkdir(parents=True, exist_ok=True)
    key = config.key
    paths = _paths(results_dir, key)
    task = task or _task(config.task)
    samples = task.samples(config.limit)

    meta = json.loads(paths["meta"].read_text()) if paths["meta"].exists() else None
    fingerprint = model_fingerprint(config.model)
    stale = bool(meta and fingerprint and meta.get("model_fingerprint") not in (None, fingerprint))
    if stale:
        warnings.warn(f"{config.label}: the checkpoint {config.model!r} changed since {key} was computed; recomputing")
    if force or stale:
        _retire(results_dir, key)
        meta = None
    before = _stored(paths["rows"])
    todo = [s for s in samples if s["id"] not in before]
    name = ((meta or {}).get("devices") or ["unknown"])[-1]
    if todo:
        name = device_name(config.device)
        stored_config = {k: v for k, v in config.to_dict().items() if k not in _NOT_IN_KEY}
        stored_config["policy_kwargs"] = portable(stored_config["policy_kwargs"])   # readable in any clone
        meta = meta or {"key": key, "config": stored_config, "model_fingerprint": fingerprint,
                        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "devices": []}
        if meta["devices"] and name not in meta["devices"]:
            warnings.warn(f"{config.label}: resuming on {name}, earlier samples ran on {meta['devices'][-1]}; "
                          "their timings are not comparable")
        if name not in meta["devices"]:
            meta["devices"].append(name)
        meta.update(model_fingerprint=fingerprint, torch=torch.__version__, python=platform.python_version(),
                    tspd_revision=git_revision())
        paths["meta"].write_text(json.dumps(meta, indent=1) + "\n")
        quiet = contextlib.redirect_stderr(io.StringIO()) if not progress else contextlib.nullcontext()
        try:
            with quiet:
                evaluate.run(harness_args(config, paths["rows"], profile), seam=seam or _cached_seam(), task=task)
        except ResultsError as e:
            if force:
                raise
            # rows written under another harness configuration: keep them aside and start again
            warnings.warn(f"{config.label}: {e}; recomputing")
            return run(config, progress=progress, results_dir=results_dir, force=True, seam=seam, task=task,
                       profile=profile)
    rows = _stored(paths["rows"])
    picked = [rows[s["id"]] for s in samples]
    return _to_result(config, picked, paths["rows"], name, len(todo))


def run_many(configs: list[RunConfig], **kwargs) -> list[RunResult]:
    """:func:`run` for each config in turn (models stay loaded between them)."""
    return [run(c, **kwargs) for c in configs]


# setting fields of paper_numbers.json that paper_config maps onto RunConfig fields
_MAPPED = {"model", "task", "task_label", "num_fewshot", "gen_length", "block_length", "policy", "ce", "cache", "tau", "H"}


def paper_config(row: dict, method_default_cache: str = "dual", **overrides) -> RunConfig:
    """The RunConfig of a paper row (``tspd.book.reported.paper_table``), with ``overrides`` applied last.

    Tables share rows (the GSM8K vanilla run appears in Tables 1, 10, 11 and 12); building every
    row's config here makes equal rows equal configs, so the registry measures each one once.
    The paper's model name is not a path: pass ``model=`` (and ``device=``, ``limit=``, ...).
    ``method_default_cache`` stands for "the baseline's own KV cache", which the paper leaves
    unnamed (Fast-dLLM and Credit Decoding rows). CE's ``tau`` / ``H`` become ``ce_kwargs``. Settings
    that select a differently trained controller (hidden size, features, training data, ...) have
    no RunConfig field: pass ``policy_kwargs=`` (e.g. the weights to load) or this raises, so that
    two different rows can never share one key by accident. Rows whose task or policy the paper
    leaves unstated need ``task=`` / ``policy=``.
    """
    s = dict(row.get("setting") or row)
    unmapped = {k: v for k, v in s.items() if k not in _MAPPED and v is not None}
    if unmapped and "policy_kwargs" not in overrides:
        raise ValueError(f"{row.get('table')} {row.get('method')!r}: {unmapped} selects a specific controller; "
                         "pass policy_kwargs= (e.g. its weights) to tell the runs apart")
    ce_kwargs = {k: s[k] for k in ("tau", "H") if s.get(k) is not None}
    fields = dict(task=s.get("task"), policy=s.get("policy"), ce=bool(s.get("ce")), ce_kwargs=ce_kwargs,
                  cache=method_default_cache if s.get("cache") == "method-default" else s.get("cache") or "none",
                  gen_length=s.get("gen_length", 256), block_length=s.get("block_length", 32))
    fields.update(overrides)
    for need in ("task", "policy"):
        if fields.get(need) is None:
            raise ValueError(f"{row.get('table')} {row.get('method')!r}: the paper does not state the {need}; pass {need}=")
    if "model" not in fields:
        raise ValueError("pass model= (a local checkpoint directory or an embedded model name)")
    return RunConfig(**fields)


__all__ = ["RunConfig", "RunResult", "run", "run_many", "load_result", "paper_config", "harness_args", "eval_command",
           "get_model", "clear_models", "device_name", "model_fingerprint", "DEFAULT_RESULTS_DIR"]
