"""How fast ``train-lm``'s batch stream builds batches for each number of batch-building processes.

    python scripts/stream_rate.py --workers 0,12 --seconds 8 -- --out runs/RUN --resume --task chain ...

Builds batches of the run's own options (task, windows, alterations, ``--batch-seeds``) with its
tokenizer (a started run's: ``--out`` must hold it) for ``--seconds`` per setting, prints problems and
positions per second for each, then the fastest worker count alone on the last line (for a script to
pass as ``--data-workers``). It times the stream alone: in training, a background thread also competes
with the step's Python for the interpreter, processes do not.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from tspd.models.loading import load_tokenizer
from tspd.options import from_args
from tspd.commands.train_lm import add_arguments
from tspd.training.lm.config import LMTrainConfig
from tspd.training.lm.stream import BatchStream


def rate(tokenizer, cfg: LMTrainConfig, seconds: float) -> tuple[float, float]:
    """Problems and sequence positions a second, after the first batch (the processes' start)."""
    stream = BatchStream(tokenizer, cfg)
    try:
        next(stream)
        start, problems, positions = time.perf_counter(), 0, 0
        while time.perf_counter() - start < seconds:
            b = next(stream)
            problems, positions = problems + b.input_ids.shape[0], positions + b.input_ids.numel()
        took = time.perf_counter() - start
        return problems / took, positions / took
    finally:
        stream.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="0,12", help="worker counts to time, comma-separated (0: one thread)")
    ap.add_argument("--seconds", type=float, default=8.0, help="seconds of building per worker count")
    ap.add_argument("train_lm", nargs=argparse.REMAINDER, help="-- then the run's train-lm options")
    args = ap.parse_args(argv)
    run = argparse.ArgumentParser(prog="train-lm")
    add_arguments(run)
    try:
        counts = [int(w) for w in args.workers.split(",")]
        cfg = from_args(LMTrainConfig, run.parse_args([a for a in args.train_lm if a != "--"]))
        if not (Path(cfg.out) / "tokenizer.json").is_file():
            raise ValueError(f"no tokenizer.json in --out {cfg.out}: time the stream of a run that has started")
        tokenizer = load_tokenizer(cfg.out)
    except ValueError as e:
        print(f"stream_rate: {e}", file=sys.stderr)
        return 2
    best = {}
    for w in counts:
        best[w], positions = rate(tokenizer, dataclasses.replace(cfg, data_workers=w), args.seconds)
        print(f"workers {w}: {best[w]:,.0f} problems/s, {positions:,.0f} positions/s", file=sys.stderr)
    print(max(best, key=best.get))
    return 0


if __name__ == "__main__":
    sys.exit(main())
