"""Rewrite what the README and the book say of the embedded model's accuracy from its record.

    .venv/bin/python scripts/model_accuracy.py [--model NAME]   # default: the book's model (DEFAULT_MODEL)

The spans between ``<!-- model-accuracy -->`` markers in README.md and book/intro.md become the
record's vanilla, one-token-per-step accuracy (:mod:`tspd.book.record`); the sentence is printed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tspd.book.record import accuracy_text, update
from tspd.models.loading import DEFAULT_MODEL


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=DEFAULT_MODEL, help="the checkpoint whose record is quoted (default: the book's)")
    args = ap.parse_args(argv)
    try:
        acc = update(args.model)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(accuracy_text(acc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
