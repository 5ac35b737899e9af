"""Rewrite every marked span of the README and the book's pages from the records that hold its numbers.

    .venv/bin/python scripts/fill_records.py          # rewrite README.md and book/intro.md
    .venv/bin/python scripts/fill_records.py --check  # exit 1 if a span differs from its record

The spans and their records: ``tspd.book.prose.FACTS``. ``tests/test_prose.py`` runs the check.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tspd.book import prose
from tspd.provenance import REPO_ROOT


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report spans that differ from their records; change nothing")
    args = ap.parse_args()
    if args.check:
        stale = [p for p in prose.PAGES if prose.filled((REPO_ROOT / p).read_text()) != (REPO_ROOT / p).read_text()]
        for p in stale:
            print(f"{p}: a marked span differs from its record (run scripts/fill_records.py)")
        return 1 if stale else 0
    for p in prose.rewrite():
        print(f"rewrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
