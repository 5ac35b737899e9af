"""``python -m tspd fill-records``: rewrite the README's and the book's marked spans (tables) from the records and
draw the README's figure from the regime records, or (``--check``, ``--diff``) say which spans differ
(:mod:`tspd.book.spans`)."""
from __future__ import annotations

import argparse
import difflib

from tspd.book.spans import rewrite, stale


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", default="", help="comma-separated span names to fill (empty: every span)")
    p.add_argument("--check", action="store_true", help="report the pages whose spans differ; change nothing")
    p.add_argument("--diff", action="store_true", help="print what a rewrite would change; change nothing")


def main(args: argparse.Namespace) -> int:
    from tspd.book.facts import FACTS
    from tspd.validate import UsageError
    names = {n for n in args.only.split(",") if n} or None
    if names and names - set(FACTS):
        raise UsageError(f"--only: unknown span {', '.join(sorted(names - set(FACTS)))}; known: {', '.join(FACTS)}")
    if args.check or args.diff:
        found = stale(names=names)
        for page, (old, new) in found.items():
            if args.diff:
                print("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), page, page)), end="")
            print(f"{page}: a marked span differs from its record (python -m tspd fill-records)")
        return 1 if found else 0
    for page in rewrite(names=names):
        print(f"rewrote {page}")
    if names is None:
        from tspd.book.regime import readme_figure
        print(f"drew {readme_figure()}")
    return 0
