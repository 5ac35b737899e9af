"""``python -m tspd bench-step``: time decoding steps of a random-weight model against the roofline
(:mod:`tspd.bench.step`); with ``--out``, the results JSON (its record, in the same module).

Also the options and the ending the bench commands share (``bench-forward``, ``bench-loop``):
:func:`add_shape_arguments` and :func:`run_command`.
"""
from __future__ import annotations

import argparse

import torch

from tspd.bench.step import SHAPES, TIMED, measure, save
from tspd.decoding.names import slug
from tspd.provenance import invoked


def add_shape_arguments(p: argparse.ArgumentParser) -> None:
    """The options the bench commands share: the random model, its canvas and the timer's repeats."""
    p.add_argument("--shape", choices=sorted(SHAPES), default="tiny", help="model shape (random weights)")
    p.add_argument("--prompt", type=int, default=896, help="prompt length in tokens")
    p.add_argument("--gen", type=int, default=256, help="generated length")
    p.add_argument("--block", type=int, default=32, help="block length")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="torch device")
    p.add_argument("--dtype", default=None, help="default: bfloat16 on GPU, float32 on CPU")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights and inputs")
    p.add_argument("--repeats", type=int, default=20, help="timed repeats per measurement (median)")
    p.add_argument("--warmup", type=int, default=3, help="untimed repeats first")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", default="1", help="comma-separated batch sizes, e.g. 1,8")
    add_shape_arguments(p)
    p.add_argument("--controllers", default=",".join(slug(*d) for d in TIMED), help="controllers timed inside generate, "
                   f"each a controller or one with Confidence Extrapolation ({slug('tspd', True)})")
    p.add_argument("--caches", default="none,dual", help="KV cache modes timed inside generate")
    p.add_argument("--generate-repeats", type=int, default=2, help="timed repeats of each whole generate call")
    p.add_argument("--confidence-dtype", default="float32",
                   help="dtype of the softmax statistics inside generate (LLaDA: bfloat16, Fast-dLLM: float64)")
    p.add_argument("--no-generate", action="store_true", help="skip the whole-generate measurements")
    p.add_argument("--fast", action="store_true", help="also time the CUDA-graph fast path (tspd.decoding.graphs)")
    p.add_argument("--parity", action="store_true", help="check fast-path tokens against the eager path")
    p.add_argument("--no-fuse", action="store_true",
                   help="q/k/v and gate/up as separate matmuls (fused on a GPU by default, as load_model does)")
    p.add_argument("--no-compile", action="store_true", help="the element-wise chains eager (compiled into one "
                   "kernel each on a CUDA GPU by default, as load_model does: tspd.models.pointwise)")
    p.add_argument("--out", default=None,
                   help="write the results JSON here; {device} becomes the device name, e.g. results/gpu/{device}.json")


def run_command(args: argparse.Namespace, command: str, measure_fn, save) -> int:
    """A bench command: ``measure_fn(args, its command line)``, stored by ``save`` at ``--out`` when given."""
    result = measure_fn(args, invoked(command))
    if args.out:
        print(f"wrote {save(result, args.out)}")
    return 0


def main(args: argparse.Namespace) -> int:
    return run_command(args, "bench-step", measure, save)
