"""``python -m tspd cache-agreement``: where cached decodings part from their no-cache twin, per stateless
controller and cache, on an embedded model, resumable (:mod:`tspd.eval.cache_agreement_table`)."""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from tspd.eval.cache_agreement_table import measure
from tspd.models.loading import DEFAULT_MODEL
from tspd.records import cache_agreement as record


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--model", default=DEFAULT_MODEL, help="embedded model name or checkpoint directory (train-lm)")
    ap.add_argument("--n", type=int, default=500, help="held-out test problems of the model's task")
    ap.add_argument("--out", default=str(record.PATH), help="summary JSON (its rows: <out>.samples.jsonl)")
    ap.add_argument("--markdown", action="store_true", help="print the stored table as Markdown and exit")


def _command_line(args: argparse.Namespace) -> str:
    threads = getattr(args, "threads", None)
    return shlex.join(["python", "-m", "tspd", "cache-agreement", "--model", str(args.model), "--n", str(args.n),
                       *(["--threads", str(threads)] if threads else []), "--out", str(args.out)])


def main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.markdown:
        print(record.markdown(record.load_dict(out)))
        return 0
    result = measure(args.model, args.n, out, _command_line(args))
    print(record.markdown(result))
    return 0
