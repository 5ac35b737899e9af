"""``python -m tspd bench-forward``: where a full forward's time goes, kernels by kind, and what each speed lever
buys (:mod:`tspd.bench.forward`); with ``--out``, the results JSON (its record, in the same module)."""
from __future__ import annotations

import argparse

from tspd.bench.forward import VARIANTS, measure, save
from tspd.commands.bench_step import add_shape_arguments, run_command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", type=int, default=1, help="batch size")
    add_shape_arguments(p)
    p.add_argument("--variants", default=None,
                   help=f"cumulative levers to time, a prefix of {','.join(VARIANTS)} (default: all four on a CUDA "
                        "GPU with Triton, eager,fused elsewhere: the loop compiles and captures only there)")
    p.add_argument("--out", default=None, help="write the results JSON here; {device} becomes the device name")


def arguments(argv: list[str]) -> argparse.Namespace:
    """The arguments of ``python -m tspd bench-forward`` from a list (for tests)."""
    p = argparse.ArgumentParser(prog="python -m tspd bench-forward")
    add_arguments(p)
    return p.parse_args(argv)


def main(args: argparse.Namespace) -> int:
    return run_command(args, "bench-forward", measure, save)
