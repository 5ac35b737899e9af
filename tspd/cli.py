"""``python -m tspd <command> ...``: one entry point, one module per command.

Each command module (``tspd/commands/<command>.py``, ``-`` as ``_``) defines ``add_arguments(parser)`` and
``main(args) -> int``, a thin layer over library calls; it is imported only
when its command runs, so ``python -m tspd generate`` never imports the evaluation harness.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

COMMANDS = {
    "generate": ("tspd.commands.generate", "decode one prompt with a diffusion LM"),
    "train-lm": ("tspd.commands.train_lm", "train an embedded model on a generated task (LLaDA SFT objective)"),
    "eval": ("tspd.commands.eval", "run a benchmark; resumable JSONL of per-sample results"),
    "grade": ("tspd.commands.grade", "grade completions made elsewhere"),
    "collect-traces": ("tspd.commands.collect_traces", "stage 1: collect EGP decoding traces (features + labels)"),
    "train-controller": ("tspd.commands.train_controller", "stage 2: train the TSPD / Learn2PD controller"),
    "bench-step": ("tspd.commands.bench_step", "time decoding steps against the roofline"),
    "bench-forward": ("tspd.commands.bench_forward", "where a full forward's time goes: kernels by kind, each speed lever"),
    "bench-loop": ("tspd.commands.bench_loop", "time the loop's work beyond its forwards, per controller, CE and cache"),
    "regime": ("tspd.commands.regime", "a train-lm checkpoint's regime figures: TPF, cache costs, longer windows"),
    "dynamics": ("tspd.commands.dynamics", "a train-lm checkpoint's token-trace dynamics: the middle TSPD and CE read"),
    "ce-audit": ("tspd.commands.ce_audit", "does CE lift the tokens that rise, and what stops it (vanilla traces)"),
    "oracle-dynamics": ("tspd.commands.oracle_dynamics", "the dynamics a perfectly learned model would show on our tasks"),
    "controller-table": ("tspd.commands.controller_table", "the controller table (book/controllers.md): every controller, CE and cache"),
    "cache-agreement": ("tspd.commands.cache_agreement", "where cached decodings part from their no-cache twin"),
    "lmeval-example": ("tspd.commands.lmeval_example", "run the README's lm-eval example and store what it measured"),
    "fill-records": ("tspd.commands.fill_records", "rewrite the README's and the book's marked spans from the records"),
}
# Commands that run torch on the CPU take --threads (train-lm has its own, in its LMTrainConfig).
THREADED = ("generate", "eval", "collect-traces", "train-controller", "bench-step", "bench-forward", "bench-loop", "regime", "dynamics",
            "ce-audit", "controller-table", "cache-agreement")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends an option's default, unless its help already says what the default is (or it has none)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text.lower() or any(action.default is v for v in (None, False, argparse.SUPPRESS)) \
                or action.default == []:
            return text
        return super()._get_help_string(action)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m tspd", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    for name, (module, help_text) in COMMANDS.items():
        # options are spelt whole: a prefix (--controller-w for --controller-weights) is an unknown option
        p = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=HelpFormatter, allow_abbrev=False)
        if name == chosen:
            mod = importlib.import_module(module)
            mod.add_arguments(p)
            if name in THREADED:
                p.add_argument("--threads", type=int, default=None,
                               help="torch CPU threads (default: torch's choice, all cores); on a shared "
                                    "machine give the cores you have to yourself, often 1")
            p.set_defaults(_main=mod.main)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of its one-line message")
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    threads = getattr(args, "threads", None) if args.command in THREADED else None
    if threads is not None and threads < 1:
        parser.error(f"--threads must be >= 1, got {threads}")
    with torch_threads(threads):
        try:
            return int(args._main(args) or 0)
        except (ValueError, FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as e:
            if debug:
                raise
            # UsageError / CheckpointError / ValueError say what is wrong and how to fix it: one line, exit 2
            print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
            return 2


@contextlib.contextmanager
def torch_threads(n: int | None):
    """torch's CPU thread pool at ``n`` for the command (None: left alone), as it was afterwards: a command
    run inside another program (a test, a notebook) leaves that program's setting untouched."""
    if n is None:
        yield
        return
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


if __name__ == "__main__":
    sys.exit(main())
