"""``python -m tspd generate``: decode one prompt and print the answer (or one JSON object)."""
from __future__ import annotations

import json

from .loading import load_model


def add_arguments(p) -> None:
    p.add_argument("--model", default=None, help="local checkpoint directory or embedded model name (default tiny-arith)")
    p.add_argument("--prompt", required=True, help="prompt text")
    p.add_argument("--gen-length", type=int, default=128)
    p.add_argument("--block-length", type=int, default=32)
    p.add_argument("--steps", type=int, default=None, help="step budget (default: gen-length, 1 token per step)")
    p.add_argument("--policy", default="vanilla", help="decoding controller (see tspd.controllers.REGISTRY)")
    p.add_argument("--threshold", type=float, default=None, help="confidence threshold for threshold policies")
    p.add_argument("--ce", action="store_true", help="Confidence Extrapolation")
    p.add_argument("--cache", default="none", choices=["none", "prefix", "dual"])
    p.add_argument("--fast", action="store_true", help="replay forwards from CUDA graphs (tspd.graphs); same tokens")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--chat", choices=["auto", "yes", "no"], default="auto",
                   help="wrap the prompt in the tokenizer's chat template (auto: if it has one)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default=None, help="float32 | bfloat16 | float16 (default: fp32 on CPU, bf16 on GPU)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def format_prompt(tokenizer, text: str, chat: str) -> str:
    """Apply the chat template as LLaDA's own scripts do (one user turn, generation prompt added)."""
    has_template = tokenizer is not None and getattr(tokenizer, "chat_template", None)
    if chat == "yes" and not has_template:
        raise SystemExit("error: --chat yes but the tokenizer has no chat template")
    if chat == "no" or not has_template:
        return text
    return tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, tokenize=False)


def main(args) -> int:
    from .generate import generate
    model = load_model(args.model, device=args.device, dtype=args.dtype)
    prompt = format_prompt(model.tokenizer, args.prompt, args.chat)
    out = generate(model, [prompt], gen_length=args.gen_length, block_length=args.block_length, steps=args.steps,
                   policy=args.policy, threshold=args.threshold, ce=args.ce, cache=args.cache,
                   temperature=args.temperature, seed=args.seed, fast=args.fast)
    if args.json:
        print(json.dumps({"text": out.texts[0] if out.texts else None, "token_ids": out.token_ids[0].tolist(),
                          "nfe": out.nfe, "seconds": round(out.seconds, 4),
                          "tokens_per_second": round(out.tokens_per_second, 2), "policy": args.policy,
                          "cache": args.cache, "ce": args.ce}))
    else:
        print(out.texts[0] if out.texts else out.token_ids[0].tolist())
    return 0
