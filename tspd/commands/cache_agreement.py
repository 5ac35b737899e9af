"""``python -m tspd cache-agreement``: where cached decodings part from their no-cache twin, per stateless
controller and cache, on an embedded model, resumable (:mod:`tspd.measures.cache_agreement`)."""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from tspd.measures.cache_agreement import PATH, load_dict, markdown, measure
from tspd.models.loading import DEFAULT_MODEL
from tspd.provenance import relative_arg


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--model", default=DEFAULT_MODEL, help="embedded model name or checkpoint directory (train-lm)")
    ap.add_argument("--n", type=int, default=500, help="held-out test problems of the model's task")
    ap.add_argument("--out", default=str(PATH), help="summary JSON (its rows: <out>.samples.jsonl)")
    ap.add_argument("--markdown", action="store_true", help="print the stored table as Markdown and exit")


def _command_line(args: argparse.Namespace) -> str:
    """The command as the record keeps it: ``--out`` relative to the repository where it lies inside it."""
    threads = getattr(args, "threads", None)
    return shlex.join(["python", "-m", "tspd", "cache-agreement", "--model", str(args.model), "--n", str(args.n),
                       *(["--threads", str(threads)] if threads else []), "--out", relative_arg(str(args.out))])


def main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.markdown:
        print(markdown(load_dict(out)))
        return 0
    result = measure(args.model, args.n, out, _command_line(args))
    print(markdown(result))
    return 0
