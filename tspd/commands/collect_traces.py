"""``python -m tspd collect-traces``: stage 1, decode prompts with the EGP oracle (or vanilla) and store what a
controller sees at every step with its labels (:mod:`tspd.training.traces`, paper Appendix A.4)."""
from __future__ import annotations

import argparse
from pathlib import Path

from tspd.decoding.config import CONTROLLER_OPTIONS, DecodeConfig, add_decode_arguments, add_model_arguments
from tspd.models.loading import DEFAULT_MODEL
from tspd.tasks.base import render_prompt
from tspd.training.traces import COLLECT, CONTROLLERS, collect, load_prompts, own_traces, save_traces


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_arguments(p)
    p.add_argument("--prompts", default=None, help="<task>-traces (arith-traces, chain-traces), flan, or a .jsonl/.txt "
                   "file (default: the traces split of the task the model was trained on)")
    p.add_argument("--flan-source", default=None, help="FLAN JSONL file or datasets hub id (with --prompts flan)")
    p.add_argument("--n", type=int, default=None, help="number of prompts (default: all)")
    p.add_argument("--controller", dest="collection", choices=CONTROLLERS, default="egp",   # not the decoding's controller
                   help="the controller that decodes the traces (Table 9's collection policy): egp (the oracle, App. A.4), "
                        "vanilla (standard PD) or mixed")
    add_decode_arguments(p, skip=CONTROLLER_OPTIONS + ("temperature", "seed"))   # EGP replays a greedy reference
    p.set_defaults(ce=COLLECT.ce)          # --no-ce: ce_conf = conf, u = 0
    p.add_argument("--batch-size", type=int, default=8, help="prompts decoded together")
    p.add_argument("--chat", choices=("on", "off"), default="off",
                   help="wrap prompts in the tokenizer's chat template (Instruct checkpoints)")
    p.add_argument("--out", required=True, help="output .pt file")


def main(args: argparse.Namespace) -> int:
    from tspd.models.loading import load_model
    decode = DecodeConfig.from_args(args)
    model = load_model(args.model, device=args.device, dtype=args.dtype)
    source = args.prompts or own_traces(model)
    prompts = load_prompts(source, args.n, args.flan_source)
    prompts = [render_prompt(q, model.tokenizer, args.chat == "on") for q in prompts]
    data = collect(model, prompts, decode, controller=args.collection, batch_size=args.batch_size,
                   meta=dict(model=str(args.model or DEFAULT_MODEL), prompt_source=source))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_traces(data, out)
    m = data["meta"]
    print(f"wrote {out}: {len(data['offsets']) - 1} block sequences, {data['features'].shape[0]} steps, "
          f"{data['labels'][data['masked']].float().mean():.3f} of masked token-steps fix-safe; "
          f"EGP matched vanilla on {m['egp_matches_vanilla']}/{m['egp_rows']} prompts")
    return 0
