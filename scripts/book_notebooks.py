"""The book's notebooks, one path a line, in ``_toc.yml``'s order: what the shell scripts execute.

    .venv/bin/python scripts/book_notebooks.py            # every notebook of _toc.yml (execute_notebooks.sh)
    .venv/bin/python scripts/book_notebooks.py --stored   # those that store what they measure (stage_book.sh):
                                                          # a `results_dir` parameter
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def notebooks(stored: bool = False) -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [ch["file"] + ".ipynb" for part in toc.get("parts", []) for ch in part.get("chapters", [])
             if Path(ch["file"]).parts[0] == "notebooks"]
    if stored:
        files = [f for f in files if any("results_dir: str" in "".join(c["source"])
                                         for c in json.loads((ROOT / f).read_text())["cells"])]
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stored", action="store_true", help="only notebooks with a results_dir parameter")
    print("\n".join(notebooks(ap.parse_args(argv).stored)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
