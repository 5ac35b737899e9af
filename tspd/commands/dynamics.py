"""``python -m tspd dynamics``: a train-lm checkpoint's token-trace dynamics (paper Section 3), kept in
``<checkpoint>/dynamics.json`` (:mod:`tspd.measures.dynamics`: what is measured and why)."""
from __future__ import annotations

import argparse

from tspd.measures.dynamics import DynamicsConfig, measure_checkpoint, targets
from tspd.models.loading import DEFAULT_MODEL
from tspd.provenance import invoked
from tspd.options import add_dataclass_arguments, from_args


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=DEFAULT_MODEL, help="a checkpoint directory or zoo name trained by train-lm")
    add_dataclass_arguments(p, DynamicsConfig)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--out", default=None, help="the record's JSON (default: <model>/dynamics.json)")


def main(args: argparse.Namespace) -> int:
    cfg = from_args(DynamicsConfig, args)
    if cfg.n < 1 or cfg.batch < 1 or cfg.window < 2:
        raise ValueError(f"--n and --batch must be >= 1 and --window >= 2, got {cfg.n}, {cfg.batch}, {cfg.window}")
    command = invoked("dynamics")
    record = measure_checkpoint(args.model, cfg, args.device, command, args.out, log=lambda s: print(s, flush=True))
    s = record["summary"]
    print(f"{s['prompts']} problems, {s['answer_tokens']} answer tokens; certain at the first forward "
          f"{s['certain_first']['value']:.1f} %; EGP / Fast-dLLM forwards {s['oracle']['egp_over_fast']['value']:.2f}")
    for t in targets(s):
        value = "-" if t["value"] is None else f"{t['value']:.1f} [{t['lo']:.1f}, {t['hi']:.1f}]"
        print(f"{t['what']}: {value} (bound {t['bound']:g}) {'met' if t['met'] else 'not met'}")
    return 0
