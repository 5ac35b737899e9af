"""``python -m tspd train-controller``: stage 2, train the TSPD gate or the Learn2PD filter on collected traces
and save it beside its model (:mod:`tspd.training.train_controller`, paper Appendix A.5)."""
from __future__ import annotations

import argparse

from tspd.decoding.controllers.tspd import FEATURES, features_without
from tspd.options import add_dataclass_arguments, from_args
from tspd.training.train_controller import CE_MODES, KINDS, ControllerTrainConfig, train_and_save


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--traces", required=True, help="trace file from `python -m tspd collect-traces`")
    add_dataclass_arguments(p, ControllerTrainConfig, skip=("features",),
                            choices={"kind": KINDS, "arch": ("lstm", "mlp"), "ce": CE_MODES,
                                     "class_weight": ("inverse", "none")})
    p.add_argument("--features", default=",".join(FEATURES), help=f"comma list from {','.join(FEATURES)}")
    p.add_argument("--drop", default="", help="Table 7 ablation: comma list of confidence,entropy,momentum,position")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--out", required=True, help="output stem, e.g. <model dir>/controllers/tspd")


def main(args: argparse.Namespace) -> int:
    features = tuple(f for f in args.features.split(",") if f)
    if args.drop:
        dropped = set(FEATURES) - set(features_without([d for d in args.drop.split(",") if d]))
        features = tuple(f for f in features if f not in dropped)
    cfg = from_args(ControllerTrainConfig, args, features=features)
    stem, saved = train_and_save(args.traces, cfg, args.out, progress=not args.quiet)
    v = saved["summary"]["val"]
    print(f"wrote {stem}.safetensors/.json/.curve.json: best epoch {saved['summary']['best_epoch']}, "
          f"val loss {v['loss']:.4f}, precision {v['precision']:.3f}, recall {v['recall']:.3f}, "
          f"fix rate {v['fix_rate']:.3f}")
    return 0
