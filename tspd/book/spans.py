"""The one rewriter of the pages' marked spans (``python -m tspd fill-records``, :mod:`tspd.commands.fill_records`).

A page marks a table written from a record as ``<!-- NAME -->...<!-- /NAME -->``, each marker on a line of its
own; :data:`tspd.book.facts.FACTS` maps each NAME to the function that writes its table. :func:`rewrite` fills
every span of :data:`PAGES` (or those named) from the records; ``--check`` and ``--diff`` change nothing.
"""
from __future__ import annotations

import re

from tspd.provenance import REPO_ROOT

PAGES = ("README.md", "book/intro.md", "book/status.md", "book/controllers.md", "book/lmeval.md")
MARK = re.compile(r"<!-- ([a-z0-9-]+) -->(.*?)<!-- /\1 -->", re.S)


def named_spans(text: str) -> list[tuple[str, str]]:
    """(name, text) of every marked span of a page."""
    return [(m.group(1), m.group(2)) for m in MARK.finditer(text)]


def body(name: str) -> str:
    """What the span ``name`` holds: its table between blank lines, a Markdown block of its own."""
    from tspd.book.facts import FACTS
    return f"\n\n{FACTS[name]()}\n\n"


def filled(text: str, names: set[str] | None = None, cache: dict | None = None) -> str:
    """``text`` with every marked span (or those of ``names``) rewritten from its record."""
    from tspd.book.facts import FACTS
    cache = {} if cache is None else cache

    def sub(m):
        name = m.group(1)
        if names is not None and name not in names:
            return m.group(0)
        if name not in FACTS:
            raise KeyError(f"unknown marked span <!-- {name} -->; known: {', '.join(FACTS)}")
        if name not in cache:
            cache[name] = body(name)
        return f"<!-- {name} -->{cache[name]}<!-- /{name} -->"

    return MARK.sub(sub, text)


def stale(pages: tuple[str, ...] = PAGES, names: set[str] | None = None) -> dict[str, tuple[str, str]]:
    """page -> (its text, its text filled) of each page whose spans differ from their records."""
    out, cache = {}, {}
    for page in pages:
        text = (REPO_ROOT / page).read_text()
        new = filled(text, names, cache)
        if new != text:
            out[page] = (text, new)
    return out


def rewrite(pages: tuple[str, ...] = PAGES, names: set[str] | None = None) -> list[str]:
    """Rewrite the marked spans of ``pages`` (paths under the repository); the pages that changed."""
    changed = stale(pages, names)
    for page, (_, new) in changed.items():
        (REPO_ROOT / page).write_text(new)
    return list(changed)
