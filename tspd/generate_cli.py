"""``python -m tspd generate``: decode one prompt and print the answer (or one JSON object)."""
from __future__ import annotations

import json

from tspd.decoding.config import DecodeConfig
from tspd.decoding.controllers.weights import check_controller_files, controller_weights
from tspd.models.loading import load_model
from tspd.eval.tasks import render_prompt
from tspd.validate import CACHE_MODES


def add_arguments(p) -> None:
    p.add_argument("--model", default=None, help="local checkpoint directory or embedded model name (default tiny-arith)")
    p.add_argument("--prompt", required=True, help="prompt text")
    p.add_argument("--gen-length", type=int, default=None,
                   help="generated positions (default: the checkpoint's own; 256 for LLaDA-8B)")
    p.add_argument("--block-length", type=int, default=None,
                   help="semi-autoregressive block width (default: the checkpoint's own; 32 for LLaDA-8B)")
    p.add_argument("--steps", type=int, default=None, help="step budget (default: gen-length, 1 token per step)")
    p.add_argument("--policy", default="vanilla", help="decoding controller (see tspd.decoding.controllers.REGISTRY)")
    p.add_argument("--threshold", type=float, default=None, help="confidence threshold for threshold policies")
    p.add_argument("--ce", action="store_true", help="Confidence Extrapolation")
    p.add_argument("--cache", default="none", choices=CACHE_MODES, help="KV cache mode (Fast-dLLM)")
    p.add_argument("--fast", action="store_true", help="replay forwards from CUDA graphs (tspd.decoding.graphs); same tokens")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--seed", type=int, default=None, help="sampling seed (temperature > 0)")
    p.add_argument("--chat", choices=["auto", "on", "off"], default="auto",
                   help="wrap the prompt in the tokenizer's chat template (auto: if it has one)")
    p.add_argument("--device", default="cpu", help="torch device of the model (cpu, cuda, cuda:N)")
    p.add_argument("--dtype", default=None, help="float32 | bfloat16 | float16 (default: fp32 on CPU, bf16 on GPU)")
    p.add_argument("--controller", default=None,
                   help="trained tspd / learn2pd controller: a directory or weights stem (default: the one in "
                        "<model>/controllers/), or an embedded model's name to borrow its controller")
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
    from tspd.models.loading import read_config, resolve_path
    from tspd.validate import UsageError, check_device, check_dtype
    if not args.prompt.strip():
        raise UsageError("empty prompt: pass the question text with --prompt")
    check_device(args.device)
    check_dtype(args.dtype)
    read_config(resolve_path(args.model))             # a directory with a config.json of a known architecture
    kwargs = {} if args.controller is None else {"weights": controller_weights(args.controller, args.policy)}
    decode = DecodeConfig.of(policy=args.policy, policy_kwargs=kwargs, threshold=args.threshold, ce=args.ce,
                             cache=args.cache, gen_length=args.gen_length, block_length=args.block_length,
                             steps=args.steps, temperature=args.temperature, seed=args.seed,
                             fast=args.fast).resolved(args.model)
    check_controller_files(args.model, args.policy, decode.policy_kwargs)
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
                          "tokens_per_second": round(out.tokens_per_second, 2), "policy": args.policy,
                          "cache": args.cache, "ce": args.ce, "prompt_truncated": out.truncated_prompts > 0}))
    else:
        print(out.texts[0] if out.texts else out.token_ids[0].tolist())
    return 0
