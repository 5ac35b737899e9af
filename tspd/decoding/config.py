"""``DecodeConfig``: how one generation is decoded, as one value (paper Algorithm 1).

Everything that changes which tokens come out or how many forwards they cost lives here: the
controller and its settings, Confidence Extrapolation (Section 3.3), the KV cache (Table 4), the
window (generated length, block width, step budget), sampling temperature and seed, the dtype of the
confidence statistics and the CUDA-graph fast path. ``generate(model, prompts, config)`` takes it
whole; :class:`tspd.eval.job.RunConfig` holds one. Every command that decodes (``generate``, ``eval``,
``collect-traces``) takes the same options for it (:func:`add_decode_arguments`, read back by
:meth:`DecodeConfig.from_args`), with the dataclass's defaults, and the same ``--model`` / ``--device`` /
``--dtype`` (:func:`add_model_arguments`). It is checked once, on construction,
so a bad value fails before any weights load.

``gen_length`` / ``block_length`` / ``steps`` may be None (the checkpoint's own window, one token per
step); :meth:`DecodeConfig.resolved` fills them in from a model or checkpoint name.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from tspd.decoding.controllers import REGISTRY, check_controller
from tspd.decoding.controllers.weights import controller_weights
from tspd.decoding.extrapolate import CEConfig
from tspd.decoding import names
from tspd.options import add_dataclass_arguments, as_key_values, key_values
from tspd.validate import CACHE_MODES, UsageError, as_bool, as_float, as_int, check_lengths

CONFIDENCE_DTYPES = ("float32", "float64", "bfloat16")
# the settings with their own spelling (a controller by name and its KEY=VALUE settings, CE and its settings);
# every other field is plain: its option is the field itself (--gen-length N)
_SPELLED = ("controller", "controller_kwargs", "ce", "ce_kwargs")
# keys a settings mapping may hold beside the fields: sugar that joins the controller's settings
SUGAR = ("threshold", "controller_weights")


def canonical(obj: dict | None, what: str, strict: bool = True) -> dict:
    """A JSON-safe copy with sorted keys (tuples become lists), so equal settings compare equal.

    Settings JSON cannot store (a tensor, a path object) are refused when ``strict`` (a stored run
    needs a key), else kept as a plain copy (a one-off ``generate`` call may pass them).
    """
    try:
        return json.loads(json.dumps(dict(obj or {}), sort_keys=True))
    except TypeError as e:
        if not strict:
            return dict(obj or {})
        raise TypeError(f"{what} must be JSON-serialisable (numbers, strings, lists, dicts): {e}") from None


def _without_ce_defaults(kwargs: dict) -> dict:
    """CE settings minus those equal to CEConfig's defaults, so equal decodings compare equal."""
    defaults = dataclasses.asdict(CEConfig())
    return {k: v for k, v in kwargs.items() if k not in defaults or defaults[k] != v}


def _set(obj, name: str, value) -> None:
    """Set a field of a frozen dataclass while it is being built (its ``__post_init__``)."""
    object.__setattr__(obj, name, value)


@dataclass(frozen=True)
class DecodeConfig:
    controller: str = "vanilla"            # decoding controller, by name (tspd.decoding.controllers.REGISTRY)
    controller_kwargs: dict = field(default_factory=dict)  # the controller's settings (threshold, weights, ...)
    ce: bool = False                   # Confidence Extrapolation (Section 3.3) on or off
    ce_kwargs: dict = field(default_factory=dict)      # CEConfig overrides; defaults dropped, so equal CEs compare equal
    cache: str = "none"                # KV cache: none | prefix | dual (Fast-dLLM's; Table 4)
    gen_length: int | None = None      # generated positions (default: the checkpoint's own; 256 for LLaDA-8B)
    block_length: int | None = None    # semi-autoregressive block width (default: the checkpoint's own; 32 for LLaDA-8B)
    steps: int | None = None           # step budget of the whole window (default: gen length, 1 token per step)
    temperature: float = 0.0           # 0: greedy; else Gumbel-max sampling at this temperature
    seed: int | None = None            # sampling seed (used only when temperature > 0)
    confidence_dtype: str = "float32"  # dtype of the softmax statistics: LLaDA uses bfloat16, Fast-dLLM float64
    fast: bool = False                 # replay window forwards from CUDA graphs (tspd.decoding.graphs); same tokens

    def __post_init__(self):
        if not isinstance(self.controller, str):
            raise UsageError(f"controller is a name ({', '.join(REGISTRY)}), not a "
                             f"{type(self.controller).__name__}: pass a ready Controller to "
                             "generate(..., controller=...)")
        if not isinstance(self.ce, bool):
            raise UsageError(f"ce is True or False (its settings go in ce_kwargs), not a {type(self.ce).__name__}")
        _set(self, "controller_kwargs", canonical(self.controller_kwargs, "controller_kwargs", strict=False))
        ce_kwargs = canonical(self.ce_kwargs, "ce_kwargs", strict=False)
        if self.ce:
            _check_ce(ce_kwargs)
        _set(self, "ce_kwargs", _without_ce_defaults(ce_kwargs) if self.ce else {})
        if self.cache not in CACHE_MODES:
            raise UsageError(f"cache must be one of {', '.join(CACHE_MODES)}, got {self.cache!r}")
        if self.temperature < 0:
            raise UsageError(f"temperature must be >= 0, got {self.temperature}")
        _set(self, "confidence_dtype", str(self.confidence_dtype).replace("torch.", ""))
        dtype = getattr(torch, self.confidence_dtype, None)
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise UsageError(f"unknown confidence_dtype {self.confidence_dtype!r}: use float32, float64 or bfloat16")
        check_controller(self.controller, self.controller_kwargs)
        if self.gen_length and self.block_length:
            check_lengths(self.gen_length, self.block_length, self.steps or self.gen_length)

    @classmethod
    def of(cls, config: "DecodeConfig | None" = None, threshold: float | None = None, **changes) -> "DecodeConfig":
        """``config`` (or the defaults) with ``changes``; ``threshold`` is sugar for ``controller_kwargs``."""
        config = config or cls()
        if threshold is not None:
            changes["controller_kwargs"] = {**changes.get("controller_kwargs", config.controller_kwargs),
                                            "threshold": threshold}
        return config.replace(**changes) if changes else config

    @classmethod
    def from_mapping(cls, settings: Mapping, source: str = "settings") -> "DecodeConfig":
        """The one parser of decoding settings: a mapping (a command line's options, lm-eval's
        ``--model_args``, a notebook's parameters, a stored run's config) -> a checked config.

        Keys: :func:`settings_keys` (the fields, ``threshold`` and ``controller_weights``, which join the
        controller's settings) plus ``controller.KEY`` / ``ce.KEY`` for one setting each. Values may be text
        (``"0.9"``, ``"true"``); None means the field's default. CE is on where ``ce`` says so, or where CE
        settings are given and ``ce`` is absent; CE settings with ``ce`` false are refused. Every bad key
        or value is one :class:`~tspd.validate.UsageError` line naming ``source``.
        """
        given = {k: v for k, v in dict(settings).items() if v is not None}
        controller_kwargs = dict(_mapping(given.pop("controller_kwargs", None), "controller_kwargs"))
        ce_kwargs = dict(_mapping(given.pop("ce_kwargs", None), "ce_kwargs"))
        for key in [k for k in given if "." in k]:
            group, _, name = key.partition(".")
            if group in ("controller", "ce") and name:
                (controller_kwargs if group == "controller" else ce_kwargs)[name] = given.pop(key)
        unknown = sorted(set(given) - set(settings_keys()))
        if unknown:
            raise UsageError(f"unknown {source} {', '.join(unknown)}: known keys are "
                             f"{', '.join(sorted(settings_keys()))}, plus controller.KEY and ce.KEY"
                             + renamed_hint(unknown))
        controller = str(given.pop("controller", cls.controller))
        if "threshold" in given:
            controller_kwargs["threshold"] = as_float("threshold", given.pop("threshold"))
        weights = given.pop("controller_weights", None)
        if weights:
            controller_kwargs["weights"] = controller_weights(str(weights), controller)
        ce = as_bool("ce", given.pop("ce")) if "ce" in given else bool(ce_kwargs)
        if ce_kwargs and not ce:
            raise UsageError(f"CE settings ({', '.join(sorted(ce_kwargs))}) given with CE off: turn CE on "
                             "(--ce, ce=true) or drop them")
        plain = {name: _PLAIN_TYPES[name](name, value) for name, value in given.items()}
        try:
            return cls(controller=controller, controller_kwargs=controller_kwargs, ce=ce, ce_kwargs=ce_kwargs, **plain)
        except TypeError as e:   # a controller setting of the wrong kind surfaces here
            raise UsageError(f"{source}: {e}") from None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "DecodeConfig":
        """The decoding a command line asks for (:func:`add_decode_arguments`; options a command left
        out keep their defaults): :meth:`from_mapping` of its options, ``--controller-arg`` / ``--ce-arg``
        as the controller's and CE's settings."""
        given = {k: v for k, v in vars(args).items() if k in settings_keys()}
        given["controller_kwargs"] = key_values(getattr(args, "controller_arg", None), "--controller-arg")
        given["ce_kwargs"] = key_values(getattr(args, "ce_arg", None), "--ce-arg")
        return cls.from_mapping(given, "option")

    def replace(self, **changes) -> "DecodeConfig":
        """A copy with ``changes``; a new ``gen_length`` brings its own default ``steps`` (one token per
        step) unless ``steps`` is given or this config's steps were not the default."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise UsageError(f"DecodeConfig has no {', '.join(sorted(unknown))}")
        if "gen_length" in changes and "steps" not in changes and self.steps == self.gen_length:
            changes["steps"] = None
        return dataclasses.replace(self, **changes)

    def resolved(self, model_or_name) -> "DecodeConfig":
        """Lengths filled in: the checkpoint's window (:func:`tspd.models.loading.decode_lengths`) where None,
        and ``steps`` = ``gen_length`` where None; checked against each other."""
        from tspd.models.loading import window
        gen_length, block_length = window(model_or_name, self.gen_length, self.block_length)
        steps = int(gen_length if self.steps is None else self.steps)
        check_lengths(gen_length, block_length, steps)
        if (gen_length, block_length, steps) == (self.gen_length, self.block_length, self.steps):
            return self
        out = copy.copy(self)     # the other fields were checked when this config was made: no second check
        for name, value in (("gen_length", int(gen_length)), ("block_length", int(block_length)), ("steps", steps)):
            _set(out, name, value)
        return out

    @property
    def num_blocks(self) -> int:
        return self.gen_length // self.block_length

    @property
    def label(self) -> str:
        """``TSPD + CE / dual``: the decoding as prose, tables and figures name it
        (:func:`tspd.decoding.names.display_name`)."""
        return names.display_name(self.controller, self.ce, self.cache)

    def slug(self, sep: str = "/") -> str:
        """``tspd+ce/dual`` (or ``tspd_ce_dual``, ``tspd|ce=on|cache=dual``): :func:`tspd.decoding.names.slug`."""
        return names.slug(self.controller, self.ce, self.cache, sep)

    def to_dict(self) -> dict:
        """The settings as plain values."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def renamed_hint(unknown) -> str:
    """What an unknown settings key that names the controller by its old word is told (issue 68)."""
    return "; policy is now called controller" if any(k.startswith("policy") for k in unknown) else ""


def settings_keys() -> tuple[str, ...]:
    """What a settings mapping may name (:meth:`DecodeConfig.from_mapping`): every field and the sugar."""
    return tuple(f.name for f in dataclasses.fields(DecodeConfig)) + SUGAR


def plain_fields() -> tuple[str, ...]:
    """The fields whose option is the field itself (``--gen-length N``)."""
    return tuple(f.name for f in dataclasses.fields(DecodeConfig) if f.name not in _SPELLED)


def _text(key: str, value) -> str:
    return str(value)


def _optional_int(key: str, value) -> int | None:
    return as_int(key, value, low=0 if key == "seed" else 1, optional=True)


# how a plain field's value is read from text (every plain field has one: tests/test_decode_config.py)
_PLAIN_TYPES = {"cache": _text, "gen_length": _optional_int, "block_length": _optional_int, "steps": _optional_int,
                "temperature": as_float, "seed": _optional_int, "confidence_dtype": _text, "fast": as_bool}


def _mapping(value, what: str) -> dict:
    """A dict setting given as a dict or as JSON text."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            pass
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a JSON object (or use {what.split('_')[0]}.KEY=VALUE), got {value!r}")
    return value


def _check_ce(ce_kwargs: dict) -> None:
    """CE settings that :class:`CEConfig` takes, with values it accepts (Section 3.3)."""
    known = [f.name for f in dataclasses.fields(CEConfig)]
    bad = sorted(set(ce_kwargs) - set(known))
    if bad:
        raise UsageError(f"CE takes no {', '.join(bad)} (it takes {', '.join(known)})")
    try:
        CEConfig(**ce_kwargs)
    except (TypeError, ValueError) as e:
        raise UsageError(f"CE settings: {e}") from None


# ------------------------------------------------------------------------------------------------
# The command line: one set of decoding options for every command
# ------------------------------------------------------------------------------------------------
CONTROLLER_OPTIONS = ("controller", "controller_arg", "threshold", "controller_weights")   # what a command with its own controller skips


def add_model_arguments(parser, model_help: str = "") -> None:
    """``--model``, ``--device``, ``--dtype``: which checkpoint a command loads, onto what, in what dtype,
    with :func:`tspd.models.loading.load_model`'s defaults (every command that loads a model takes these three)."""
    from tspd.models.loading import DEFAULT_MODEL
    parser.add_argument("--model", default=None,
                        help=f"local checkpoint directory or embedded model name (default {DEFAULT_MODEL}){model_help}")
    parser.add_argument("--device", default="cpu", help="torch device of the model (cpu, cuda, cuda:N)")
    parser.add_argument("--dtype", default=None,
                        help="float32 | bfloat16 | float16 (default: float32 on a CPU, bfloat16 elsewhere)")


def add_decode_arguments(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """The decoding options, defaults and help taken from :class:`DecodeConfig`'s fields.

    ``skip`` leaves out fields or option groups a command sets itself (``collect-traces`` names its
    own collection controller: ``skip=CONTROLLER_OPTIONS``).
    """
    if "controller" not in skip:
        parser.add_argument("--controller", default=DecodeConfig.controller,
                            help=f"decoding controller: {', '.join(REGISTRY)}")
    if "controller_arg" not in skip:
        parser.add_argument("--controller-arg", action="append", default=[], metavar="KEY=VALUE",
                            help="a controller setting (value parsed as JSON when it can be); repeatable")
    if "threshold" not in skip:
        parser.add_argument("--threshold", type=float, default=None,
                            help="confidence threshold of a threshold controller (sugar for --controller-arg threshold=...)")
    if "controller_weights" not in skip:
        parser.add_argument("--controller-weights", default=None,
                            help="trained tspd / learn2pd controller: a directory or weights stem (default: the one "
                                 "in <model>/controllers/), or an embedded model's name to borrow its controller")
    if "ce" not in skip:
        parser.add_argument("--ce", action=argparse.BooleanOptionalAction, default=None,
                            help="Confidence Extrapolation (paper Section 3.3; default off, on where --ce-arg is given)")
        parser.add_argument("--ce-arg", action="append", default=[], metavar="KEY=VALUE",
                            help="a CE setting (tspd.decoding.extrapolate.CEConfig: tau, H, ...); repeatable")
    add_dataclass_arguments(parser, DecodeConfig, only=tuple(f for f in plain_fields() if f not in skip),
                            choices={"cache": CACHE_MODES, "confidence_dtype": CONFIDENCE_DTYPES})


def decode_options(config: DecodeConfig) -> list[str]:
    """The command-line options :meth:`DecodeConfig.from_args` reads back as ``config``."""
    out = ["--controller", config.controller]
    for item in as_key_values(config.controller_kwargs):
        out += ["--controller-arg", item]
    out += ["--ce"] if config.ce else []
    for item in as_key_values(config.ce_kwargs):
        out += ["--ce-arg", item]
    defaults = DecodeConfig()
    for name in plain_fields():   # the cache and the window always (a stored run's command says them), the rest if set
        value = getattr(config, name)
        if value is None or (value == getattr(defaults, name) and name != "cache"):
            continue
        out += [f"--{name.replace('_', '-')}"] if value is True else [f"--{name.replace('_', '-')}", str(value)]
    return out
