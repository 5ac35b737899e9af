"""Markdown tables, written one way for every record and page (TRAINING.md sections, the README's tables, the
book's sentences): a header line, the rule, then a line per row, each cell as given."""
from __future__ import annotations

from typing import Iterable, Sequence


def row_line(cells: Iterable) -> str:
    """``| a | b |`` (an empty cell: ``|  |``)."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(header: Sequence, rows: Iterable[Sequence] = ()) -> list[str]:
    """The table's lines: ``header``, the rule (``|---|``), then a line per row."""
    return [row_line(header), "|" + "---|" * len(header)] + [row_line(r) for r in rows]


def dict_table(rows: Sequence[dict]) -> list[str]:
    """:func:`table` of rows given as dicts: the first row's keys are the header (no rows: no lines)."""
    return table(list(rows[0]), [list(r.values()) for r in rows]) if rows else []


__all__ = ["row_line", "table", "dict_table"]
