"""What the shell scripts need to know of a model, printed on one line.

    .venv/bin/python scripts/model_info.py book              # tiny-arith: the book's model (DEFAULT_MODEL)
    .venv/bin/python scripts/model_info.py task tiny-arith   # arith: the generated task it was trained on
    .venv/bin/python scripts/model_info.py task RUN_DIR      # ... of a train-lm run directory (its config.json)

``scripts/ship_model.sh`` and ``scripts/train_controllers.sh`` read them here, so that neither names a
model or a task itself. A model trained on no generated task is one line on stderr and exit 2.
"""
from __future__ import annotations

import argparse
import sys

from tspd.tasks.generated import trained_task
from tspd.models.loading import DEFAULT_MODEL, checkpoint_task


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("book", help="the book's model: tspd.models.loading.DEFAULT_MODEL")
    task = sub.add_parser("task", help="the generated task a train-lm checkpoint was trained on")
    task.add_argument("model", help="an embedded model's name or a checkpoint directory")
    args = ap.parse_args(argv)
    if args.what == "book":
        print(DEFAULT_MODEL)
        return 0
    try:
        trained_task(args.model)      # one line where it is missing or names no generated task
    except ValueError as e:           # CheckpointError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(checkpoint_task(args.model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
