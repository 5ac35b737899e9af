"""A checkpoint's ``TRAINING.md``: the one module that writes it (train-lm's record, the regime section, a
re-evaluation), so that every part of the page comes from one writer's rules.

``python -m tspd train-lm`` writes the page (:func:`write_page`) and appends a re-evaluation (:func:`append`);
``python -m tspd regime`` puts its section in place of its last one (:func:`write_section`).
"""
from __future__ import annotations

from pathlib import Path

FILENAME = "TRAINING.md"


def path_of(checkpoint_dir: str | Path) -> Path:
    return Path(checkpoint_dir) / FILENAME


def write_page(checkpoint_dir: str | Path, lines: list[str]) -> Path:
    """The whole page (train-lm's record), replacing what was there."""
    path = path_of(checkpoint_dir)
    path.write_text("\n".join(lines))
    return path


def append(checkpoint_dir: str | Path, text: str) -> Path:
    path = path_of(checkpoint_dir)
    with path.open("a") as f:
        f.write(text)
    return path


def write_section(checkpoint_dir: str | Path, heading: str, lines: list[str]) -> Path:
    """``lines`` (starting with ``heading``) in place of the page's section under ``heading``, up to the next
    ``## `` heading (appended when the page has no such section)."""
    path = path_of(checkpoint_dir)
    text = path.read_text() if path.is_file() else ""
    body = "\n".join(lines) + "\n"
    start = text.find(heading)
    if start < 0:
        path.write_text(text.rstrip("\n") + "\n\n" + body if text else body)
        return path
    later = text.find("\n## ", start + len(heading))
    path.write_text(text[:start] + body + ("\n" + text[later + 1:] if later >= 0 else ""))
    return path


__all__ = ["FILENAME", "path_of", "write_page", "append", "write_section"]
