"""What one evaluation is, as typed values: what it decodes and on what (:class:`RunConfig`, whose key
names its stored results), how it is carried out (:class:`EvalOptions`) and where its rows go
(:class:`EvalJob`, what :func:`tspd.eval.harness.evaluate` takes, with the checkpoint opened once).

``python -m tspd eval`` builds an :class:`EvalJob` from its options
(:func:`tspd.commands.eval.job_from_args`) and the notebooks' registry (:func:`tspd.eval.experiments.result`)
from a :class:`RunConfig`; the harness never sees a command line. The same decoding asked for either way
is the same job: the same row configuration (:meth:`EvalJob.row_config`), so either one resumes the
other's rows file.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tspd.decoding.config import DecodeConfig, canonical, settings_keys
from tspd.models.loading import DEFAULT_MODEL, Checkpoint, CheckpointError, default_task
from tspd.provenance import local, portable
from tspd.validate import CHAT_MODES, UsageError

KEY_VERSION = 1          # bump when the meaning of stored results changes (all keys change with it)

# fields that do not change what a sample's result is, so they stay out of the key
_NOT_IN_KEY = ("limit",)


# Decoding fields every key names (KEY_VERSION 1); the rest of DecodeConfig enters a key only when it
# differs from its default, so a run at those defaults keeps the key its stored results are filed under.
# (The seed is named by every key too, beside the run's fields.)
_KEYED_DECODE = ("controller", "controller_kwargs", "ce", "ce_kwargs", "cache", "gen_length", "block_length", "steps")
# a stored run spells the controller's two fields as it did when the 300-odd stored records were written (their
# keys hash this spelling): to_dict writes it, from_dict reads it (and the fields' own names)
STORED_NAMES = {"controller": "policy", "controller_kwargs": "policy_kwargs"}
_OPTIONAL_DECODE = tuple(f.name for f in dataclasses.fields(DecodeConfig) if f.name not in _KEYED_DECODE + ("seed",))


def opened(model: "str | Checkpoint") -> Checkpoint | None:
    """``model``'s checkpoint, opened (its ``config.json`` read once), or None where there is none here (a
    stored run of a model this machine lacks is still read back by its key)."""
    try:
        return Checkpoint.open(model)
    except CheckpointError:
        return None


@dataclass(frozen=True, init=False)
class RunConfig:
    """One benchmark run: a :class:`DecodeConfig` plus what it runs on. Defaults: the book's model
    (:data:`~tspd.models.loading.DEFAULT_MODEL`) on the task it was trained on, on the CPU.

    Decoding settings may be given whole (``decode=DecodeConfig(...)``) or field by field
    (``RunConfig(controller="tspd", ce=True)``); the ones every key names are properties (``config.cache``),
    the others are read from ``decode`` (``config.decode.seed``). The window is
    resolved on construction (None: the checkpoint's own, from ``checkpoint`` when the caller has
    opened it, else from the model's ``config.json``, read once: the opened checkpoint is kept in
    ``checkpoint`` for the registry and the harness; ``steps`` None: ``gen_length``), and so is the task
    (None: the one the model was trained on, :func:`~tspd.models.loading.default_task`), the sampling
    seed None means 0 (a stored run is always seeded; it matters only at temperature > 0), ``limit``
    None or 0 means the whole test split and ``dtype`` None means float32 on the CPU and bfloat16
    elsewhere (what :func:`tspd.load_model` picks), so that equal runs have equal keys. Controller and CE
    settings must be JSON-serialisable: they are part of the key.
    """
    model: str = DEFAULT_MODEL         # embedded model name or local checkpoint directory
    task: str | None = None            # tspd.tasks.registry name: arith, chain, gsm8k, math, math500, humaneval, mbpp
    decode: DecodeConfig = field(default_factory=DecodeConfig)  # how to decode (controller, CE, cache, window, seed)
    limit: int | None = None           # first n samples of the test split (not part of the key)
    device: str = "cpu"
    dtype: str | None = None
    batch_size: int = 1                # prompts per generate() call
    # the model's checkpoint as opened for this run (given, or opened here when the task or window came from it;
    # None: not opened yet, or no checkpoint on this machine): what the registry fingerprints and the harness
    # loads, so that a job reads config.json once. Not part of the key, nor of equality.
    checkpoint: Checkpoint | None = field(default=None, compare=False, repr=False)

    def __init__(self, model: str = DEFAULT_MODEL, task: str | None = None, decode: DecodeConfig | None = None,
                 limit: int | None = None, device: str = "cpu", dtype: str | None = None, batch_size: int = 1,
                 checkpoint: Checkpoint | None = None, **decode_fields):
        unknown = set(decode_fields) - set(settings_keys())
        if unknown:
            raise TypeError(f"RunConfig has no field {', '.join(sorted(unknown))}")
        model = str(model).rstrip("/") or str(model)
        if "controller_kwargs" in decode_fields:   # a stored config names repository files <repo>/...: this clone's
            decode_fields["controller_kwargs"] = local(decode_fields["controller_kwargs"])
        if decode is None:
            decode = DecodeConfig.from_mapping(decode_fields, "run setting")
        elif decode_fields:
            decode = DecodeConfig.of(decode, **decode_fields)
        if decode.seed is None:
            decode = decode.replace(seed=0)
        canonical(decode.controller_kwargs, "controller_kwargs")
        canonical(decode.ce_kwargs, "ce_kwargs")
        if dtype is None:
            dtype = "float32" if torch.device(device).type == "cpu" else "bfloat16"
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        if checkpoint is None and (task is None or not (decode.gen_length and decode.block_length)):
            checkpoint = opened(model)
        fields = dict(model=model, task=task or default_task(checkpoint or model),
                      decode=decode.resolved(checkpoint or model), limit=None if not limit else int(limit),
                      device=str(torch.device(device)), dtype=str(dtype).replace("torch.", ""), batch_size=batch_size,
                      checkpoint=checkpoint)
        for name, value in fields.items():   # frozen: set once, here
            object.__setattr__(self, name, value)

    def __hash__(self) -> int:   # the dict fields are not hashable; the key is
        return hash((self.key, self.limit))

    def to_dict(self) -> dict:
        """Flat settings: the run's fields and the decoding's, spelled as every stored sidecar has them
        (:data:`STORED_NAMES`)."""
        d = {"model": self.model, "task": self.task}
        d.update({STORED_NAMES.get(k, k): getattr(self.decode, k) for k in _KEYED_DECODE})
        defaults = DecodeConfig()
        d.update({k: getattr(self.decode, k) for k in _OPTIONAL_DECODE
                  if getattr(self.decode, k) != getattr(defaults, k)})
        d.update(limit=self.limit, seed=self.decode.seed, device=self.device, dtype=self.dtype,
                 batch_size=self.batch_size)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        """The run :meth:`to_dict` (or a stored sidecar) spells."""
        stored = {v: k for k, v in STORED_NAMES.items()}
        d = {stored.get(k, k): v for k, v in d.items()}
        names = {f.name for f in dataclasses.fields(cls)} | set(settings_keys())
        return cls(**{k: v for k, v in d.items() if k in names})

    def keyed(self) -> dict:
        """The settings the key covers: every field but ``limit``, repository paths written portably
        (``<repo>/...``, the same in every clone); what a run's sidecar stores."""
        d = {k: v for k, v in self.to_dict().items() if k not in _NOT_IN_KEY}
        d[STORED_NAMES["controller_kwargs"]] = portable(d[STORED_NAMES["controller_kwargs"]])
        return d

    @property
    def key(self) -> str:
        """12 hex digits of a SHA-256 over the canonical JSON of :meth:`keyed`."""
        blob = json.dumps({**self.keyed(), "_v": KEY_VERSION}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def replace(self, **changes) -> "RunConfig":
        """A copy with ``changes`` (run or decoding fields); a new ``gen_length`` brings its own default
        ``steps`` (one token per step) unless ``steps`` is given or this config's steps were not the
        default."""
        decode_changes = {k: changes.pop(k) for k in list(changes) if k in settings_keys()}
        decode = DecodeConfig.of(changes.pop("decode", self.decode), **decode_changes)
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "decode"}
        if str(changes.get("model", self.model)).rstrip("/") != self.model:
            own["checkpoint"] = None      # another model: its own checkpoint, opened when needed
        return RunConfig(**{**own, **changes}, decode=decode)

    @property
    def label(self) -> str:
        """A short human-readable name: ``arith/fast-dllm+ce/dual/L128``."""
        return f"{self.task}/{self.decode.slug()}/L{self.gen_length}"


def _read_from_decode(name: str) -> property:
    return property(lambda self: getattr(self.decode, name), doc=f"``decode.{name}`` (a setting every key names)")


for _name in _KEYED_DECODE:   # config.controller is config.decode.controller, and so for each keyed decoding setting
    setattr(RunConfig, _name, _read_from_decode(_name))


@dataclass(frozen=True)
class EvalOptions:
    """How a run is carried out beyond what it decodes: the eval command's other options."""
    chat: str = "auto"                 # chat template: auto (when the tokenizer has one, Instruct models) | on | off
    source: str | None = None          # a 'datasets' hub id to read instead of local files
    data_dir: str | None = None        # evaluation data directory (default: $TSPD_DATA_DIR, <repo>/../shared/data, <repo>/data)
    truncate_prompt: bool = False      # keep the last tokens of prompts too long for the model (default: refuse them)
    grade_workers: int = 2             # parallel sandboxes for code tasks
    profile: bool = False              # time each batch's forwards, controller and CE into its rows (syncs the device)

    def __post_init__(self):
        if self.chat not in CHAT_MODES:
            raise UsageError(f"chat must be one of {', '.join(CHAT_MODES)}, got {self.chat!r}")


@dataclass(frozen=True)
class EvalJob:
    """One evaluation: a run, the rows file it fills (resumed if it exists), how it is carried out, and
    the run's checkpoint as its builder opened it (None: the harness opens it, once, when it needs one)."""
    config: RunConfig
    out: Path
    options: EvalOptions = field(default_factory=EvalOptions)
    checkpoint: Checkpoint | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "out", Path(self.out))   # frozen

    def row_config(self) -> dict:
        """Everything that changes what a sample's row contains (not: limit, batch size, device, paths),
        whose :func:`tspd.records.rows.config_id` every row stores and a resumed run checks.

        Its spelling is frozen, since committed rows carry ids of it: CE settings travel in ``ce`` (a
        dict when there are any), ``threshold`` is always None (it has joined the controller's settings), and
        ``truncate_prompt`` / ``confidence_dtype`` appear only when not their defaults.
        """
        c, d, o = self.config, self.config.decode, self.options
        return {"task": c.task, "split": "test", "source": o.source, "model": c.model,   # (STORED_NAMES' spelling)
                "policy": d.controller, "policy_kwargs": portable(d.controller_kwargs),
                "ce": dict(d.ce_kwargs) if d.ce and d.ce_kwargs else d.ce,
                "cache": d.cache, "gen_length": d.gen_length, "block_length": d.block_length,
                "steps": d.steps, "threshold": None, "temperature": d.temperature,
                "seed": d.seed, "chat": o.chat, "dtype": c.dtype,
                **({"truncate_prompt": True} if o.truncate_prompt else {}),
                **({"confidence_dtype": d.confidence_dtype} if d.confidence_dtype != "float32" else {})}


__all__ = ["RunConfig", "EvalOptions", "EvalJob", "KEY_VERSION", "STORED_NAMES"]
