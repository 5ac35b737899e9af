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
from dataclasses import dataclass, field

import torch

from tspd.decoding.controllers import REGISTRY, check_policy
from tspd.decoding.controllers.weights import controller_weights
from tspd.decoding.extrapolate import CEConfig
from tspd.decoding import names
from tspd.options import add_dataclass_arguments, as_key_values, key_values
from tspd.validate import CACHE_MODES, UsageError, check_lengths

CONFIDENCE_DTYPES = ("float32", "float64", "bfloat16")
# fields whose command-line option is the field itself (--gen-length N); the others have their own spelling
_PLAIN = ("cache", "gen_length", "block_length", "steps", "temperature", "seed", "confidence_dtype", "fast")


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
    policy: str = "vanilla"            # decoding controller, by name (tspd.decoding.controllers.REGISTRY)
    policy_kwargs: dict = field(default_factory=dict)  # the controller's settings (threshold, weights, ...)
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
        if not isinstance(self.policy, str):
            raise UsageError(f"policy is a controller's name ({', '.join(REGISTRY)}), not a "
                             f"{type(self.policy).__name__}: decode with a ready Controller through "
                             "generate(..., controller=...)")
        if not isinstance(self.ce, bool):
            raise UsageError(f"ce is True or False (its settings go in ce_kwargs), not a {type(self.ce).__name__}")
        _set(self, "policy_kwargs", canonical(self.policy_kwargs, "policy_kwargs", strict=False))
        ce_kwargs = canonical(self.ce_kwargs, "ce_kwargs", strict=False)
        _set(self, "ce_kwargs", _without_ce_defaults(ce_kwargs) if self.ce else {})
        if self.cache not in CACHE_MODES:
            raise UsageError(f"cache must be one of {', '.join(CACHE_MODES)}, got {self.cache!r}")
        if self.temperature < 0:
            raise UsageError(f"temperature must be >= 0, got {self.temperature}")
        _set(self, "confidence_dtype", str(self.confidence_dtype).replace("torch.", ""))
        dtype = getattr(torch, self.confidence_dtype, None)
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise UsageError(f"unknown confidence_dtype {self.confidence_dtype!r}: use float32, float64 or bfloat16")
        check_policy(self.policy, self.policy_kwargs)
        if self.gen_length and self.block_length:
            check_lengths(self.gen_length, self.block_length, self.steps or self.gen_length)

    @classmethod
    def of(cls, config: "DecodeConfig | None" = None, threshold: float | None = None, **changes) -> "DecodeConfig":
        """``config`` (or the defaults) with ``changes``; ``threshold`` is sugar for ``policy_kwargs``."""
        config = config or cls()
        if threshold is not None:
            changes["policy_kwargs"] = {**changes.get("policy_kwargs", config.policy_kwargs), "threshold": threshold}
        return config.replace(**changes) if changes else config

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "DecodeConfig":
        """The decoding a command line asks for (:func:`add_decode_arguments`; options a command left
        out keep their defaults). ``--threshold`` and ``--controller-weights`` join the policy's settings."""
        given = vars(args)
        policy = given.get("policy", "vanilla")
        policy_kwargs = key_values(given.get("policy_arg"), "--policy-arg")
        if given.get("controller_weights"):
            policy_kwargs["weights"] = controller_weights(given["controller_weights"], policy)
        plain = {name: given[name] for name in _PLAIN if name in given}
        ce = given.get("ce", False)
        if given.get("ce_arg") and not ce:
            raise UsageError("--ce-arg given without --ce: add --ce, or drop the CE settings")
        return cls.of(policy=policy, policy_kwargs=policy_kwargs, threshold=given.get("threshold"), ce=ce,
                      ce_kwargs=key_values(given.get("ce_arg"), "--ce-arg"), **plain)

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
        return names.display_name(self.policy, self.ce, self.cache)

    def slug(self, sep: str = "/") -> str:
        """``tspd+ce/dual`` (or ``tspd_ce_dual``, ``tspd|ce=on|cache=dual``): :func:`tspd.decoding.names.slug`."""
        return names.slug(self.policy, self.ce, self.cache, sep)

    def to_dict(self) -> dict:
        """The settings as plain values."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


# ------------------------------------------------------------------------------------------------
# The command line: one set of decoding options for every command
# ------------------------------------------------------------------------------------------------
POLICY_OPTIONS = ("policy", "policy_arg", "threshold", "controller_weights")   # what a command with its own policy skips


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
    own collection policy: ``skip=POLICY_OPTIONS``).
    """
    if "policy" not in skip:
        parser.add_argument("--policy", default=DecodeConfig.policy,
                            help=f"decoding controller: {', '.join(REGISTRY)}")
    if "policy_arg" not in skip:
        parser.add_argument("--policy-arg", action="append", default=[], metavar="KEY=VALUE",
                            help="a controller setting (value parsed as JSON when it can be); repeatable")
    if "threshold" not in skip:
        parser.add_argument("--threshold", type=float, default=None,
                            help="confidence threshold of a threshold policy (sugar for --policy-arg threshold=...)")
    if "controller_weights" not in skip:
        parser.add_argument("--controller-weights", default=None,
                            help="trained tspd / learn2pd controller: a directory or weights stem (default: the one "
                                 "in <model>/controllers/), or an embedded model's name to borrow its controller")
    if "ce" not in skip:
        parser.add_argument("--ce", action=argparse.BooleanOptionalAction, default=DecodeConfig.ce,
                            help="Confidence Extrapolation (paper Section 3.3)")
        parser.add_argument("--ce-arg", action="append", default=[], metavar="KEY=VALUE",
                            help="a CE setting (tspd.decoding.extrapolate.CEConfig: tau, H, ...); repeatable")
    add_dataclass_arguments(parser, DecodeConfig, only=tuple(f for f in _PLAIN if f not in skip),
                            choices={"cache": CACHE_MODES, "confidence_dtype": CONFIDENCE_DTYPES})


def decode_options(config: DecodeConfig) -> list[str]:
    """The command-line options :meth:`DecodeConfig.from_args` reads back as ``config``."""
    out = ["--policy", config.policy]
    for item in as_key_values(config.policy_kwargs):
        out += ["--policy-arg", item]
    out += ["--ce"] if config.ce else []
    for item in as_key_values(config.ce_kwargs):
        out += ["--ce-arg", item]
    defaults = DecodeConfig()
    for name in _PLAIN:   # the cache and the window always (a stored run's command says them), the rest if set
        value = getattr(config, name)
        if value is None or (value == getattr(defaults, name) and name != "cache"):
            continue
        out += [f"--{name.replace('_', '-')}"] if value is True else [f"--{name.replace('_', '-')}", str(value)]
    return out
