"""``python -m tspd train-lm``: train an embedded diffusion LM on a generated task (LLaDA's SFT objective), or
evaluate a trained one again (``--eval-only``); the loop is :mod:`tspd.training.train_lm`'s."""
from __future__ import annotations

import argparse

from tspd.options import add_dataclass_arguments, from_args
from tspd.training.lm.config import CHOICES, LMTrainConfig
from tspd.training.train_lm import eval_only, train


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output checkpoint directory")
    add_dataclass_arguments(p, LMTrainConfig, skip=("out",), choices=CHOICES)
    p.add_argument("--eval-only", action="store_true",
                   help="skip training: evaluate the checkpoint in --out and append to its TRAINING.md")


def main(args: argparse.Namespace) -> int:
    cfg = from_args(LMTrainConfig, args)   # bad options raise; python -m tspd prints them as one line
    if getattr(args, "eval_only", False):
        eval_only(cfg)
        return 0
    train(cfg, log=lambda s: print(s, flush=True))
    return 0
