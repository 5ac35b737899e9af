"""``python -m tspd lmeval-example``: run the README's lm-eval example (three commands, each in a fresh process)
on an embedded model and store what each measured (:mod:`tspd.measures.lmeval_example`)."""
from __future__ import annotations

import argparse
import json

from tspd.measures.lmeval_example import PATH, Example, run_example, save
from tspd.models.loading import DEFAULT_MODEL


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--model", default=DEFAULT_MODEL, help="an embedded model trained on a generated task")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads of each command")
    ap.add_argument("--out", default=str(PATH), help="the record's JSON")


def main(args: argparse.Namespace) -> int:
    example = Example(args.model)   # checked before any decoding; a bad model is one line (exit 2)
    result = run_example(example, args.threads)
    save(result, args.out)
    print(json.dumps(result.to_dict(), indent=1))
    return 0
