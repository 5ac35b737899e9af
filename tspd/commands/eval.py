"""``python -m tspd eval``: run a benchmark; one JSON line per sample, resumable; a summary at the end.

The options become one typed job (:func:`job_from_args`: a :class:`~tspd.eval.job.EvalJob`), which the
harness evaluates (:func:`tspd.eval.harness.evaluate`: the rows, the summary, sharding and resuming).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tspd.decoding.config import DecodeConfig, add_decode_arguments, add_model_arguments
from tspd.eval.harness import REFERENCE, Seam, evaluate
from tspd.eval.job import EvalJob, EvalOptions, RunConfig
from tspd.records.rows import ResultsError
from tspd.tasks.registry import TASKS, TaskDataError
from tspd.models.loading import DEFAULT_MODEL, PAPER_LENGTHS, Checkpoint
from tspd.options import add_dataclass_arguments, from_args
from tspd.validate import CHAT_MODES, UsageError, check_device, check_dtype


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", required=True, choices=sorted(TASKS), help="benchmark")
    add_model_arguments(p, f", or '{REFERENCE}' for the data set's reference answers")
    add_decode_arguments(p)
    p.add_argument("--limit", type=int, default=None, help="first N samples only (0 or unset: all)")
    p.add_argument("--batch-size", type=int, default=1, help="prompts per generate() call")
    add_dataclass_arguments(p, EvalOptions, choices={"chat": CHAT_MODES})
    p.add_argument("--out", required=True, help="results FILE.jsonl (resumed if it exists)")


def job_from_args(args: argparse.Namespace) -> EvalJob:
    """The job an eval command line asks for; device, dtype, batch size and limit checked first, then the
    checkpoint opened (the one read of its ``config.json``) and carried by the job."""
    if args.batch_size < 1:
        raise UsageError(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.limit is not None and args.limit < 0:
        raise UsageError(f"--limit must be >= 0 (0: every sample), got {args.limit}")
    model = args.model or DEFAULT_MODEL
    if model != REFERENCE:
        check_device(args.device)
        check_dtype(args.dtype)
    decode = DecodeConfig.from_args(args)       # controller and its arguments, lengths, temperature: checked here
    checkpoint = None if model == REFERENCE else Checkpoint.open(model)
    if checkpoint is None:                      # no checkpoint to take a window from
        decode = decode.replace(gen_length=decode.gen_length or PAPER_LENGTHS[0],
                                block_length=decode.block_length or PAPER_LENGTHS[1])
    config = RunConfig(model=model, task=args.task, decode=decode, limit=args.limit, device=args.device,
                       dtype=args.dtype, batch_size=args.batch_size, checkpoint=checkpoint)
    return EvalJob(config, Path(args.out), from_args(EvalOptions, args), checkpoint)


def main(args: argparse.Namespace, seam: Seam | None = None) -> int:
    """``python -m tspd eval``; ``seam`` as in :func:`tspd.eval.harness.evaluate`."""
    out = args.out
    try:
        job = job_from_args(args)
        summary = evaluate(job, seam)
    except (TaskDataError, ResultsError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished samples are in {out}; rerun the same command to resume", file=sys.stderr)
        return 130
    print(json.dumps(summary, indent=2))
    return 0
