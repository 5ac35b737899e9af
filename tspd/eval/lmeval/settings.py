"""``--model_args`` of ``lm_eval --model tspd`` -> one checked :class:`ModelArgs` (no lm-eval, no weights).

lm-eval hands the adapter ``key=value`` pairs (values already typed: ``0.9``, ``64``, ``true``) or a
JSON object, plus its own ``--device`` and ``--batch_size``. Keys:

=====================  =============================================================================
``pretrained``         checkpoint directory or embedded model name (default: the book's model, ``DEFAULT_MODEL``)
``device``, ``dtype``  torch device (default: lm-eval's ``--device``; its default ``cuda:0`` falls back to
                       the CPU where torch sees no GPU, as lm-eval's ``hf`` model does); auto/float32/bfloat16/float16
``controller``         by name (vanilla, fast-dllm, prophet, credit, learn2pd, egp, tspd, ...)
``threshold``          the controller's confidence threshold (sugar for ``controller.threshold``)
``controller.KEY``     any other controller argument, e.g. ``controller.weights=/path/controllers/tspd``
``controller_weights`` trained tspd / learn2pd controller (directory, stem, or an embedded model's name)
``ce``, ``ce.KEY``     Confidence Extrapolation on/off and its settings
``cache``              none | prefix | dual
``gen_length``, ``block_length``, ``steps``   the window (default: the checkpoint's own, one token per step)
``temperature``, ``seed``, ``confidence_dtype``, ``fast``   as :class:`~tspd.decoding.config.DecodeConfig`
``chat``               off (default) | on | auto: the whole lm-eval prompt as one user turn of the
                       checkpoint's chat template (auto: when it has one); lm-eval's
                       ``--apply_chat_template`` renders turns itself instead
``add_bos_token``      tokenize prompts with the tokenizer's special tokens (default false, as lm-eval's hf)
``truncate_prompt``    keep the last tokens of a prompt too long for the model (default: refuse it)
``mc_num``, ``mc_batch``, ``mc_seed``, ``check_greedy``   ``loglikelihood`` (LLaDA's Monte-Carlo estimate):
                       samples (128), forward batch of them (32), seed (0), LLaDA's greedy check (true)
``eos_fill``           auto (default) | true | false: score the continuation followed by EOS up to
                       ``gen_length``, i.e. the window as generation fills it and as an SFT model trained
                       on EOS-filled answers saw it; auto = true for checkpoints trained by ``train-lm``
                       (their config.json names the window), false otherwise (LLaDA's estimate of a base model)
=====================  =============================================================================

Every bad value is one :class:`~tspd.validate.UsageError` line, raised before any weights load.
"""
from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass

from tspd.decoding.config import DecodeConfig, renamed_hint, settings_keys
from tspd.models.loading import DEFAULT_MODEL, Checkpoint, CheckpointError, load_tokenizer, task_spec
from tspd.validate import CHAT_MODES, UsageError, as_bool, as_int, check_dtype

OTHER_KEYS = ("pretrained", "device", "dtype", "chat", "add_bos_token", "truncate_prompt", "batch_size",
              "mc_num", "mc_batch", "mc_seed", "check_greedy", "eos_fill")
IGNORED_KEYS = ("trust_remote_code", "max_batch_size")   # lm-eval passes these to every model


@dataclass(frozen=True)
class ModelArgs:
    """What ``--model_args`` ask for, checked: where the model is, how it decodes, how it scores."""
    pretrained: str = DEFAULT_MODEL
    device: str = "cpu"
    dtype: str = "auto"
    decode: DecodeConfig = dataclasses.field(default_factory=DecodeConfig)
    chat: str = "off"
    add_bos_token: bool = False
    truncate_prompt: bool = False
    batch_size: int = 1
    mc_num: int = 128
    mc_batch: int = 32
    mc_seed: int = 0
    check_greedy: bool = True
    eos_fill: bool = False
    checkpoint: Checkpoint | None = dataclasses.field(default=None, compare=False, repr=False)   # pretrained, opened


def parse_model_args(args: dict | str | None, device: str | None = None, batch_size=None) -> ModelArgs:
    """``--model_args`` (a dict, a ``k=v,k2=v2`` string or a JSON object) plus lm-eval's ``--device`` and
    ``--batch_size`` -> :class:`ModelArgs`; a bad key or value is one UsageError line."""
    args = model_args_dict(args)
    decoding = {k: args.pop(k) for k in list(args) if k in settings_keys() or k.partition(".")[0] in ("controller", "ce")}
    unknown = sorted(k for k in args if k not in OTHER_KEYS + IGNORED_KEYS)
    if unknown:
        raise UsageError(f"unknown --model_args {', '.join(unknown)} for --model tspd: known keys are "
                         f"{', '.join(sorted(set(settings_keys() + OTHER_KEYS) - {'controller_kwargs', 'ce_kwargs'}))}, "
                         f"plus controller.KEY and ce.KEY" + renamed_hint(unknown))
    if args.get("batch_size") is not None and batch_size is not None and args["batch_size"] != batch_size:
        raise UsageError("batch_size given twice (--model_args and --batch_size): give it once, with --batch_size")
    batch = as_int("batch_size", args.get("batch_size", batch_size if batch_size is not None else 1), low=1)

    pretrained = str(args.get("pretrained") or DEFAULT_MODEL)
    try:
        checkpoint = Checkpoint.open(pretrained)       # one line: no such directory, no config.json, ...
    except CheckpointError as e:
        raise UsageError(str(e)) from None
    dtype = str(args.get("dtype") or "auto").replace("torch.", "")
    check_dtype(dtype)
    decode = _decode(decoding, checkpoint)
    chat = _chat(args, checkpoint)
    eos_fill = args.get("eos_fill", "auto")
    if str(eos_fill).lower() == "auto":
        eos_fill = bool(task_spec(checkpoint))
    eos_fill = as_bool("eos_fill", eos_fill)
    mc_num = as_int("mc_num", args.get("mc_num", 128), low=1)
    mc_batch = min(as_int("mc_batch", args.get("mc_batch", 32), low=1), mc_num)
    if mc_num % mc_batch:
        raise UsageError(f"mc_num {mc_num} must be a multiple of mc_batch {mc_batch} (LLaDA draws the mask "
                         f"ratios of one batch together): use e.g. mc_num {-(-mc_num // mc_batch) * mc_batch}")
    return ModelArgs(pretrained=pretrained, device=_device(args.get("device"), device), dtype=dtype,
                     decode=decode, chat=chat, add_bos_token=as_bool("add_bos_token", args.get("add_bos_token", False)),
                     truncate_prompt=as_bool("truncate_prompt", args.get("truncate_prompt", False)),
                     batch_size=batch, mc_num=mc_num, mc_batch=mc_batch,
                     mc_seed=as_int("mc_seed", args.get("mc_seed", 0)),
                     check_greedy=as_bool("check_greedy", args.get("check_greedy", True)), eos_fill=eos_fill,
                     checkpoint=checkpoint)


def _decode(args: dict, checkpoint: Checkpoint) -> DecodeConfig:
    """The decoding ``--model_args`` ask for (:meth:`DecodeConfig.from_mapping`), with the checkpoint's
    window where they give none and its controller files checked."""
    from tspd.decoding.controllers.weights import check_controller_files
    decode = DecodeConfig.from_mapping(args, "--model_args").resolved(checkpoint)
    check_controller_files(checkpoint, decode.controller, decode.controller_kwargs)
    return decode


def _chat(args: dict, checkpoint: Checkpoint) -> str:
    """``chat`` as one of :data:`~tspd.validate.CHAT_MODES`; ``on`` only for a checkpoint with a chat template."""
    chat = args.get("chat", "off")
    chat = {True: "on", False: "off"}.get(chat, chat) if isinstance(chat, bool) else str(chat).lower()
    if chat not in CHAT_MODES:
        raise UsageError(f"chat must be one of {', '.join(CHAT_MODES)}, got {args.get('chat')!r}")
    if chat == "on":
        try:
            template = getattr(load_tokenizer(checkpoint.path), "chat_template", None)
        except CheckpointError:
            template = None
        if not template:
            raise UsageError(f"chat=on, but {args.get('pretrained') or DEFAULT_MODEL} has no chat template: "
                             "use chat=off (or auto)")
    return chat


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------
def model_args_dict(args) -> dict:
    if args is None:
        return {}
    if isinstance(args, dict):
        return dict(args)
    text = str(args).strip()
    if text.startswith("{"):
        try:
            return dict(json.loads(text))
        except (json.JSONDecodeError, TypeError, ValueError) as e:
            raise UsageError(f"--model_args is not a valid JSON object: {e}") from None
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--model_args expects key=value pairs, got {item!r}")
        out[key.strip()] = _typed(value.strip())
    return out


def _typed(value: str):
    """A ``k=v`` value as lm-eval types it: true/false, None, numbers, else the string."""
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def _device(asked, lm_eval_device) -> str:
    """``device`` of --model_args (checked strictly), else lm-eval's ``--device`` (CPU where CUDA is
    absent, as lm-eval's hf model falls back); under torchrun / accelerate, cuda is this process's GPU."""
    import torch

    from tspd.eval.shard import Shard
    from tspd.validate import check_device
    if asked is not None:
        device = str(check_device(str(asked)))
    else:
        device = str(lm_eval_device or "cpu")
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            raise UsageError(f"unknown --device {device!r}: use cpu or cuda") from None
        if dev.type == "cuda" and not torch.cuda.is_available():
            if lm_eval_device not in (None, "cuda:0"):   # lm-eval's own default is cuda:0
                warnings.warn(f"--device {device}: this torch sees no CUDA GPU, running on the CPU")
            device = "cpu"
    shard = Shard.from_env()
    if shard.active and torch.device(device).type == "cuda":
        device = f"cuda:{shard.local_rank}"
    return device
