"""``python -m tspd generate``: decode one prompt and print the answer (or one JSON object)."""
from __future__ import annotations

import json

from tspd.decoding.config import DecodeConfig, add_decode_arguments
from tspd.decoding.controllers.weights import check_controller_files
from tspd.eval.tasks import render_prompt
from tspd.models.loading import add_model_arguments, load_model, read_config, resolve_path
from tspd.validate import UsageError, check_device, check_dtype


def add_arguments(p) -> None:
    add_model_arguments(p)
    p.add_argument("--prompt", required=True, help="prompt text")
    add_decode_arguments(p)
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


def check(args) -> DecodeConfig:
    """Every argument checked before the weights load (they take minutes for an 8B model); the decoding
    asked for, with the checkpoint's window where none is given."""
    if not args.prompt.strip():
        raise UsageError("empty prompt: pass the question text with --prompt")
    check_device(args.device)
    check_dtype(args.dtype)
    read_config(resolve_path(args.model))             # a directory with a config.json of a known architecture
    decode = DecodeConfig.from_args(args).resolved(args.model)
    check_controller_files(args.model, decode.policy, decode.policy_kwargs)
    return decode


def main(args) -> int:
    from tspd.decoding.loop import generate
    decode = check(args)
    model = load_model(args.model, device=args.device, dtype=args.dtype)
    prompt = format_prompt(model.tokenizer, args.prompt, args.chat)
    out = generate(model, [prompt], decode, truncate_prompt=args.truncate_prompt)
    if args.json:
        print(json.dumps({"text": out.texts[0] if out.texts else None, "token_ids": out.token_ids[0].tolist(),
                          "nfe": out.nfe, "seconds": round(out.seconds, 4),
                          "tokens_per_second": round(out.tokens_per_second, 2), "policy": decode.policy,
                          "cache": decode.cache, "ce": decode.ce, "prompt_truncated": out.truncated_prompts > 0}))
    else:
        print(out.texts[0] if out.texts else out.token_ids[0].tolist())
    return 0
