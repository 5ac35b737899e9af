"""``python -m tspd bench-loop``: time the loop's work beyond its forwards on a real checkpoint, per controller, CE and
cache (:mod:`tspd.bench.loop`); with ``--out``, the results JSON (its record, in the same module)."""
from __future__ import annotations

import argparse

from tspd.bench.loop import measure, save
from tspd.commands.bench_step import run_command
from tspd.models.loading import DEFAULT_MODEL
from tspd.validate import CACHE_MODES


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=DEFAULT_MODEL, help="checkpoint: a zoo name or a local directory")
    p.add_argument("--n", type=int, default=20, help="held-out prompts of the checkpoint's own task (batch 1 each)")
    p.add_argument("--gen-length", type=int, default=None, help="generated length (default: the checkpoint's)")
    p.add_argument("--block-length", type=int, default=None, help="block length (default: the checkpoint's)")
    p.add_argument("--controllers", default="vanilla,fast-dllm,tspd", help="comma-separated controllers")
    p.add_argument("--ce", default="off,on", help="CE settings to time: off, on or both")
    p.add_argument("--caches", default=",".join(CACHE_MODES), help="comma-separated KV cache modes")
    p.add_argument("--threshold", type=float, default=0.9, help="Fast-dLLM's confidence threshold")
    p.add_argument("--repeats", type=int, default=3, help="timed repetitions of every prompt")
    p.add_argument("--prompt-length", type=int, default=48,
                   help="length of the random prompts used for a checkpoint that names no task of its own")
    p.add_argument("--note", default="", help="a remark stored with the results (e.g. that the machine was shared)")
    p.add_argument("--out", default=None,
                   help="write the results JSON here; {device} becomes the device name, e.g. results/bench/loop-{device}.json")


def main(args: argparse.Namespace) -> int:
    return run_command(args, "bench-loop", measure, save)
