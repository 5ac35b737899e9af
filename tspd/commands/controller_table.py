"""``python -m tspd controller-table``: the controller table (book/controllers.md), every controller with and without CE under
each KV-cache mode on an embedded model, resumable (:mod:`tspd.book.controller_table`)."""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from tspd.book.controller_table import CACHES, CONTROLLERS, PATH, console, load_dict, make_table, markdown, table_configs
from tspd.decoding.config import DecodeConfig
from tspd.models.loading import DEFAULT_MODEL
from tspd.options import add_dataclass_arguments
from tspd.provenance import relative_arg
from tspd.validate import UsageError


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--model", default=DEFAULT_MODEL, help="embedded model name or checkpoint directory; its runs "
                    "decode the task it was trained on")
    ap.add_argument("--n", type=int, default=500, help="held-out test problems of the model's task")
    add_dataclass_arguments(ap, DecodeConfig, only=("gen_length", "block_length"))
    ap.add_argument("--batch-size", type=int, default=1, help="1 = the paper's setting (Appendix A.1)")
    ap.add_argument("--controllers", default=",".join(CONTROLLERS), help="comma-separated controllers")
    ap.add_argument("--caches", default=",".join(CACHES), help="comma-separated cache modes")
    ap.add_argument("--ce", default="off,on", help="comma-separated: CE off, on or both")
    ap.add_argument("--out", default=str(PATH), help="the table; the runs go to controller_table/ beside it")
    ap.add_argument("--markdown", action="store_true", help="print the stored table as Markdown and exit")


def _command_line(args: argparse.Namespace) -> str:
    """The command as run, for the table's provenance (``--out`` relative to the repository where it lies inside)."""
    opts = [("--model", args.model), ("--n", args.n), ("--controllers", args.controllers), ("--ce", args.ce),
            ("--caches", args.caches), ("--threads", getattr(args, "threads", None)),
            ("--out", relative_arg(str(args.out)))]
    return shlex.join(["python", "-m", "tspd", "controller-table",
                       *[str(x) for flag, v in opts if v is not None for x in (flag, v)]])


def main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.markdown:
        print(markdown(load_dict(out)))
        return 0
    if args.n < 1 or args.batch_size < 1:
        raise UsageError("--n and --batch-size must be >= 1")
    table = make_table(table_configs(args), out, model=args.model, n=args.n, batch_size=args.batch_size,
                       command=_command_line(args), log=lambda s: print(s, flush=True))
    print(console(table))
    return 0
