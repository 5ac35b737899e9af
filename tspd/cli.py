"""``python -m tspd <command> ...``: one entry point, one module per command.

Each command module defines ``add_arguments(parser)`` and ``main(args) -> int``; it is imported only
when its command runs, so ``python -m tspd generate`` never imports the evaluation harness.
"""
from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "generate": ("tspd.generate_cli", "decode one prompt with a diffusion LM"),
    "train-lm": ("tspd.train_lm", "train the embedded tiny-arith model (LLaDA SFT objective)"),
    "eval": ("tspd.evaluate", "run a benchmark; resumable JSONL of per-sample results"),
    "grade": ("tspd.grade_cli", "grade completions made elsewhere"),
    "collect-traces": ("tspd.traces", "stage 1: collect EGP decoding traces (features + labels)"),
    "train-controller": ("tspd.train_controller", "stage 2: train the TSPD / Learn2PD controller"),
    "bench-step": ("tspd.bench", "time decoding steps against the roofline"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m tspd", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        if name == chosen:
            mod = importlib.import_module(module)
            mod.add_arguments(p)
            p.set_defaults(_main=mod.main)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    return int(args._main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
