"""``python -m tspd generate``: decode one prompt and print the answer (or one JSON object)."""
from __future__ import annotations

import argparse
import json

from tspd.decoding.config import DecodeConfig, add_decode_arguments, add_model_arguments
from tspd.decoding.controllers import decoding_controllers
from tspd.decoding.controllers.weights import check_controller_files
from tspd.models.loading import Checkpoint, load_model
from tspd.tasks.base import render_prompt
from tspd.validate import UsageError, check_device, check_dtype


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_arguments(p)
    p.add_argument("--prompt", required=True, help="prompt text")
    p.add_argument("--controller", default=DecodeConfig.controller,
                   help=f"decoding controller: {', '.join(decoding_controllers())} (EGP, the trace-collection oracle, "
                        f"is collect-traces' --controller)")
    add_decode_arguments(p, skip=("controller",))
    p.add_argument("--chat", choices=["auto", "on", "off"], default="auto",
                   help="wrap the prompt in the tokenizer's chat template (auto: if it has one)")
    p.add_argument("--truncate-prompt", action="store_true",
                   help="keep the last tokens of a prompt too long for the model (default: refuse it)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def format_prompt(tokenizer, text: str, chat: str) -> str:
    """Apply the chat template as LLaDA's own scripts do (one user turn, generation prompt added)."""
    has_template = tokenizer is not None and getattr(tokenizer, "chat_template", None)
    if chat == "on" and not has_template:
        raise ValueError("--chat on but the tokenizer has no chat template: use --chat off")
    return render_prompt(text, tokenizer, {"on": True, "off": False}.get(chat))


def check(args: argparse.Namespace) -> tuple[Checkpoint, DecodeConfig]:
    """Every argument checked before the weights load (they take minutes for an 8B model): the checkpoint
    (opened once: a directory with a config.json of a known architecture) and the decoding asked for, with
    the checkpoint's window where none is given."""
    if not args.prompt.strip():
        raise UsageError("empty prompt: pass the question text with --prompt")
    check_device(args.device)
    check_dtype(args.dtype)
    checkpoint = Checkpoint.open(args.model)
    decode = DecodeConfig.from_args(args).resolved(checkpoint)
    check_controller_files(checkpoint, decode.controller, decode.controller_kwargs)
    return checkpoint, decode


def main(args: argparse.Namespace) -> int:
    from tspd.decoding.loop import generate
    checkpoint, decode = check(args)
    model = load_model(checkpoint, device=args.device, dtype=args.dtype)
    prompt = format_prompt(model.tokenizer, args.prompt, args.chat)
    out = generate(model, [prompt], decode, truncate_prompt=args.truncate_prompt)
    if args.json:
        print(json.dumps({"text": out.texts[0] if out.texts else None, "token_ids": out.token_ids[0].tolist(),
                          "nfe": out.nfe, "seconds": round(out.seconds, 4),
                          "tokens_per_second": round(out.tokens_per_second, 2), "controller": decode.controller,
                          "cache": decode.cache, "ce": decode.ce, "prompt_truncated": out.truncated_prompts > 0}))
    else:
        print(out.texts[0] if out.texts else out.token_ids[0].tolist())
    return 0
