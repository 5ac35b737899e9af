"""Argument checks shared by :func:`tspd.decoding.loop.generate`, the command line and the notebooks.

Every check runs before any weights load and raises :class:`UsageError` with one line that names the
problem and the fix; ``python -m tspd`` prints that line and exits 2 (``--debug`` shows the traceback).
"""
from __future__ import annotations

import importlib
import inspect

import torch

DTYPES = ("float32", "bfloat16", "float16")
CACHE_MODES = ("none", "prefix", "dual")   # Fast-dLLM's KV caches (paper Table 4); "none" recomputes the canvas


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


def controller_class(policy: str):
    from tspd.decoding.controllers import REGISTRY
    if policy not in REGISTRY:
        raise UsageError(f"unknown policy {policy!r}: choose one of {', '.join(sorted(REGISTRY))}")
    module, cls = REGISTRY[policy].split(":")
    return getattr(importlib.import_module(module), cls)


def check_policy(policy, policy_kwargs: dict | None = None, for_decoding: bool = True) -> None:
    """A known policy given only arguments it takes; thresholds in (0, 1]."""
    from tspd.decoding.controllers import Controller
    if isinstance(policy, Controller):
        if policy_kwargs:
            raise UsageError("policy arguments given together with a ready Controller instance: pass one of them")
        return
    cls = controller_class(policy)
    kwargs = dict(policy_kwargs or {})
    params = {} if cls.__init__ is object.__init__ else dict(inspect.signature(cls.__init__).parameters)
    params.pop("self", None)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    if for_decoding and "reference" in params and params["reference"].default is inspect.Parameter.empty \
            and "reference" not in kwargs:
        raise UsageError(f"policy {policy!r} is the trace-collection oracle (it needs each prompt's vanilla "
                         f"answer): use `python -m tspd collect-traces --policy {policy}`")
    unknown = [k for k in kwargs if k not in params and not takes_any]
    if unknown:
        takes = [p for p in params if params[p].kind is not params[p].VAR_POSITIONAL]
        raise UsageError(f"policy {policy!r} takes no {', '.join(unknown)}"
                         + (f" (it takes {', '.join(takes)})" if takes else "")
                         + ("; for a confidence threshold use --policy fast-dllm" if "threshold" in unknown else ""))
    t = kwargs.get("threshold")
    if t is not None and not (isinstance(t, (int, float)) and 0 < t <= 1):
        raise UsageError(f"threshold must be in (0, 1], got {t!r}")


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


def check_controller_files(model, policy: str, policy_kwargs: dict | None = None) -> None:
    """A learned policy (tspd, learn2pd) needs trained weights: ``weights=`` or ``<model>/controllers/``."""
    from pathlib import Path

    from tspd.models.loading import resolve_path
    if policy not in ("tspd", "learn2pd"):
        return
    weights = (policy_kwargs or {}).get("weights")
    if weights is not None:
        stem = Path(weights).with_suffix("") if str(weights).endswith((".safetensors", ".json")) else Path(weights)
        if stem.is_dir():
            stem = stem / policy
        if not (stem.with_suffix(".safetensors").exists() and stem.with_suffix(".json").exists()):
            raise UsageError(f"no {policy} controller at {weights} (expected {stem}.safetensors and {stem}.json)")
        return
    path = resolve_path(model)
    stem = path / "controllers" / policy
    if stem.with_suffix(".safetensors").exists() and stem.with_suffix(".json").exists():
        return
    raise UsageError(
        f"no trained {policy} controller for {path} (looked for {stem}.safetensors): make one with "
        f"`python -m tspd collect-traces --model {path} --prompts flan --flan-source FILE_OR_HUB_ID --n 2640 "
        f"--out traces.pt` (stage 1) then `python -m tspd train-controller --traces traces.pt --kind {policy} "
        f"--out {stem}` (stage 2). The paper's stage 1 took about 2 hours on two A100s for 2,640 prompts with "
        f"LLaDA-8B and stage 2 six minutes (book: reproduce); `--controller tiny-arith` borrows the embedded "
        f"model's controller instead")


__all__ = ["UsageError", "check_lengths", "check_policy", "check_device", "check_dtype", "check_fits",
           "check_controller_files", "max_positions", "controller_class", "DTYPES"]
