"""``python -m tspd train-controller``: stage 2, train the TSPD gate or the Learn2PD filter on collected traces
and save it beside its model (:mod:`tspd.training.train_controller`, paper Appendix A.5)."""
from __future__ import annotations

import argparse

from tspd.decoding.controllers.tspd import FEATURES, features_without
from tspd.options import add_dataclass_arguments, from_args
from tspd.training.own_decodings import OwnConfig, train_on_own_and_save
from tspd.training.train_controller import CE_MODES, KINDS, ControllerTrainConfig, train_and_save


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--traces", required=True, help="trace file from `python -m tspd collect-traces`")
    add_dataclass_arguments(p, ControllerTrainConfig, skip=("features",),
                            choices={"kind": KINDS, "arch": ("lstm", "mlp"), "ce": CE_MODES,
                                     "class_weight": ("inverse", "none")})
    p.add_argument("--features", default=",".join(FEATURES), help=f"comma list from {','.join(FEATURES)}")
    p.add_argument("--drop", default="", help="Table 7 ablation: comma list of confidence,entropy,momentum,position")
    own = OwnConfig()
    p.add_argument("--own-rounds", type=int, default=0, help="rounds of training on the gate's own decodings after "
                   "the traces' (issue 82, beyond the paper; 0: the paper's recipe only)")
    p.add_argument("--own-gate", type=float, default=own.gate, help="the gate the rollouts decode at")
    p.add_argument("--own-n", type=int, default=own.rollout_n, help="traces-split problems rolled out each round")
    p.add_argument("--own-labels", choices=("token", "joint"), default=own.labels,
                   help="token: each state's argmax against a right answer; joint: tokens the gate fired on together "
                        "are judged together (one wrong makes all unsafe)")
    p.add_argument("--own-check-n", type=int, default=own.check_n, help="held-out traces-split problems judging each round")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--out", required=True, help="output stem, e.g. <model dir>/controllers/tspd")


def main(args: argparse.Namespace) -> int:
    features = tuple(f for f in args.features.split(",") if f)
    if args.drop:
        dropped = set(FEATURES) - set(features_without([d for d in args.drop.split(",") if d]))
        features = tuple(f for f in features if f not in dropped)
    cfg = from_args(ControllerTrainConfig, args, features=features)
    if args.own_rounds < 0 or args.own_n < 1 or args.own_check_n < 1 or not 0 < args.own_gate < 1:
        raise ValueError("--own-rounds >= 0, --own-n and --own-check-n >= 1, --own-gate in (0, 1)")
    if args.own_rounds and cfg.kind != "tspd":
        raise ValueError("--own-rounds trains the TSPD gate (--kind tspd)")
    if args.own_rounds:
        own = OwnConfig(rounds=args.own_rounds, gate=args.own_gate, rollout_n=args.own_n, check_n=args.own_check_n,
                        labels=args.own_labels)
        stem, saved = train_on_own_and_save(args.traces, cfg, own, args.out, progress=not args.quiet)
        for r in saved["own"]["rounds"]:
            print(f"round {r['round']}: {r['right']} / {r['n']} held-out problems right in {r['forwards']} forwards")
    else:
        stem, saved = train_and_save(args.traces, cfg, args.out, progress=not args.quiet)
    v = saved["summary"]["val"]
    print(f"wrote {stem}.safetensors/.json/.curve.json: best epoch {saved['summary']['best_epoch']}, "
          f"val loss {v['loss']:.4f}, precision {v['precision']:.3f}, recall {v['recall']:.3f}, "
          f"fix rate {v['fix_rate']:.3f}")
    return 0
