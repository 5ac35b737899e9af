"""Argument checks shared by :func:`tspd.decoding.loop.generate`, the command line and the notebooks.

This module is the bottom of the package: it imports nothing of ``tspd`` (checks that need a
registry live beside it: :func:`tspd.decoding.controllers.check_controller`,
:func:`tspd.decoding.controllers.weights.check_controller_files`).

Every check runs before any weights load and raises :class:`UsageError` with one line that names the
problem and the fix; ``python -m tspd`` prints that line and exits 2 (``--debug`` shows the traceback).
"""
from __future__ import annotations

import torch

DTYPES = ("float32", "bfloat16", "float16")
CACHE_MODES = ("none", "prefix", "dual")   # Fast-dLLM's KV caches (paper Table 4); "none" recomputes the canvas
CHAT_MODES = ("auto", "on", "off")   # prompts as chat turns: where the checkpoint has a template, always, never


class UsageError(ValueError):
    """A bad argument; the message says what is wrong and what to do instead."""


def check_lengths(gen_length: int, block_length: int, steps: int) -> int:
    """The number of semi-autoregressive blocks (paper Algorithm 1) of a valid length triple."""
    if gen_length < 1 or block_length < 1:
        raise UsageError(f"gen_length and block_length must be positive, got {gen_length} and {block_length}")
    if gen_length % block_length:
        raise UsageError(f"gen_length {gen_length} is not a multiple of block_length {block_length}: "
                         f"use e.g. gen_length {-(-gen_length // block_length) * block_length}")
    num_blocks = gen_length // block_length
    if steps < num_blocks or steps % num_blocks:
        raise UsageError(f"steps {steps} must be a positive multiple of the number of blocks ({num_blocks}): "
                         f"use e.g. steps {gen_length}")
    return num_blocks


def check_threshold(threshold, what: str = "threshold") -> None:
    """A confidence threshold in (0, 1]: the one rule every controller that takes one applies."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise UsageError(f"{what} must be in (0, 1], got {threshold!r}")


# ------------------------------------------------------------------------------------------------
# Values from text (lm-eval's key=value pairs, notebook parameters, stored settings) as typed settings
# ------------------------------------------------------------------------------------------------
def as_bool(key: str, value) -> bool:
    if isinstance(value, bool):
        return value
    low = str(value).strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off", "none", ""):
        return False
    raise UsageError(f"{key}={value!r}: expected true or false")


def as_int(key: str, value, low: int | None = None, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, str) and value.strip().lower().startswith("auto"):
        raise UsageError(f"{key} {value!r} is not supported: give a number")
    try:
        out = int(value)
        if isinstance(value, bool) or (isinstance(value, float) and out != value):
            raise ValueError
    except (TypeError, ValueError):
        raise UsageError(f"{key}={value!r}: expected a whole number") from None
    if low is not None and out < low:
        raise UsageError(f"{key} must be >= {low}, got {out}")
    return out


def as_float(key: str, value) -> float:
    """A number: text parsed, numbers kept as given (``1`` stays ``1``: a stored run's key spells it so)."""
    try:
        if isinstance(value, bool):
            raise ValueError
        return value if isinstance(value, (int, float)) else float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{key}={value!r}: expected a number") from None


def check_device(device) -> torch.device:
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise UsageError(f"unknown device {device!r}: use cpu or cuda (cuda:N for one GPU of several)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"device {device!r} asked for, but this torch ({torch.__version__}) sees no CUDA GPU: "
                         "use --device cpu, or install a CUDA build of torch on a GPU machine")
    return dev


def check_dtype(dtype) -> None:
    if dtype in (None, "auto") or isinstance(dtype, torch.dtype):
        return
    if str(dtype).replace("torch.", "") not in DTYPES:
        raise UsageError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPES)} (or leave it unset)")


def max_positions(config) -> int | None:
    """The longest sequence a checkpoint's positions were made for, if its config states one."""
    for name in ("max_sequence_length", "max_position_embeddings"):
        value = getattr(config, name, None)
        if value is None:
            value = (getattr(config, "extra", None) or {}).get(name)
        if value:
            return int(value)
    return None


def check_fits(prompt_tokens: int, gen_length: int, limit: int | None) -> None:
    """A prompt of ``prompt_tokens`` plus the generation window within the model's positions."""
    if limit is not None and prompt_tokens + gen_length > limit:
        raise UsageError(f"prompt of {prompt_tokens} tokens + gen_length {gen_length} = "
                         f"{prompt_tokens + gen_length} positions exceeds the model's {limit}: shorten the "
                         f"prompt (fewer few-shot examples) or lower gen_length, or allow left-truncation "
                         f"(truncate_prompt=True, --truncate-prompt)")


__all__ = ["UsageError", "check_lengths", "check_threshold", "as_bool", "as_int", "as_float", "check_device", "check_dtype", "check_fits", "max_positions", "DTYPES",
           "CACHE_MODES", "CHAT_MODES"]
