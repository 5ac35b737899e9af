"""The paper's reported numbers (``tspd/reported.json``, read through :mod:`tspd.theirs`) and side-by-side tables against ours.

Every table of the paper (Tables 1-13, ids ``table1`` .. ``table13`` in the tex's order) is stored as
flat rows::

    {"table": "table1", "tex_label": "tab:llada_benchmark", "caption": "...",
     "setting": {"model": "LLaDA-8B-Instruct", "task": "gsm8k", "gen_length": 256, "block_length": 32,
                 "policy": "tspd", "ce": true, "cache": "dual", ...},
     "method": "Ours", "tps": 77.3, "speedup": 11.2, "accuracy": 78.8, "dagger": true?}

``method`` is the row label as printed (the dagger, "without KV cache", is the separate ``dagger``
flag); ``speedup`` is None where the table has no speedup column; ``accuracy`` is in percent.
The file also holds the figures (the tex has no data for them), the overheads quoted in the text
and the paper's measurement setup. ``tests/test_reported.py`` checks every number against the tex.

Paper numbers are always labelled as the paper's (:func:`paper_label`); ours carry model, device and
sample count (:func:`ours_label`). Nothing here needs pandas: tables are lists of dicts, shown in a
notebook through :class:`Table` (HTML / Markdown repr).
"""
from __future__ import annotations

import copy
import html
import json

from tspd import markdown, theirs
from tspd.eval.experiments import ours_label

NUMBERS_FILE = theirs.FILE   # every published number the project quotes (tspd.theirs)
METRICS = ("tps", "speedup", "accuracy")
METRIC_TITLES = {"tps": "TPS", "speedup": "speedup", "accuracy": "acc. (%)", "nfe_mean": "NFE",
                 "n": "n", "tps_nonpad": "TPS (non-pad)", "tpf": "TPF"}


_numbers = theirs._numbers


def numbers() -> dict:
    """The whole ``tspd/reported.json`` (a deep copy: callers may modify it)."""
    return theirs.reported()


def table_ids() -> list[str]:
    return [t["id"] for t in _numbers()["tables"]]


def table_info(table_id: str) -> dict:
    """Number, tex label, caption, section, columns and transcription notes of one table."""
    for t in _numbers()["tables"]:
        if t["id"] == table_id:
            return copy.deepcopy(t)
    raise KeyError(f"unknown table {table_id!r}; known: {', '.join(table_ids())}")


def paper_table(table_id: str, **where) -> list[dict]:
    """The rows of one paper table in the paper's order (deep copies).

    ``where`` filters on row fields or setting fields, e.g. ``paper_table("table1", task="gsm8k")``
    or ``paper_table("table12", part="tau")``.
    """
    table_info(table_id)   # raises KeyError for an unknown id
    rows = [copy.deepcopy(r) for r in _numbers()["rows"] if r["table"] == table_id]
    return [r for r in rows if all(_get(r, k) == v for k, v in where.items())]


def figure_info(figure_id: str) -> dict:
    """Caption, tex label and description of one paper figure (``figure1`` .. ``figure6``)."""
    for f in _numbers()["figures"]:
        if f["id"] == figure_id:
            return copy.deepcopy(f)
    raise KeyError(f"unknown figure {figure_id!r}")


def overheads() -> list[dict]:
    """The controller/extrapolator overheads quoted in Section 4.5 (percent of one forward)."""
    return copy.deepcopy(_numbers()["overheads"])


def paper_label(rows: list[dict] | None = None) -> str:
    """``paper (LLaDA-8B-Instruct, A100)``: the provenance of the paper's numbers."""
    models = []
    for r in rows or []:
        m = r["setting"].get("model")
        if m and m not in models:
            models.append(m)
    gpu = _numbers()["measurement"]["gpu"].replace("NVIDIA ", "").split()[0]
    return f"paper ({', '.join(models) or 'LLaDA-8B-Instruct'}, {gpu})"


def _get(row: dict, key: str):
    """A row field, falling back to the row's ``setting``."""
    if key in row:
        return row[key]
    return (row.get("setting") or {}).get(key)


# ------------------------------------------------------------------------------------------------
# Display
# ------------------------------------------------------------------------------------------------
class Table(list):
    """A list of dicts that renders as a table in Jupyter (HTML) and as Markdown in text.

    ``columns`` fixes the column order (default: keys of the first row, in order); ``caption`` is
    printed above the table.
    """

    def __init__(self, rows=(), columns: list[str] | None = None, caption: str | None = None):
        super().__init__(rows)
        self.columns = list(columns) if columns else (list(self[0]) if self else [])
        self.caption = caption

    def _cells(self) -> list[list[str]]:
        return [[_fmt(r.get(c)) for c in self.columns] for r in self]

    def to_markdown(self) -> str:
        text = "\n".join(markdown.table(self.columns, [[c.replace("|", "\\|") for c in cells] for cells in self._cells()]))
        return f"{self.caption}\n\n{text}" if self.caption else text

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th>{esc(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in cells) + "</tr>" for cells in self._cells())
        cap = f"<caption>{esc(self.caption)}</caption>" if self.caption else ""
        # wrapped so that a table wider than the page scrolls sideways instead of being cut at the page's edge
        return (f'<div style="overflow-x: auto"><table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
                f'</table></div>')

    def __str__(self) -> str:
        return self.to_markdown()


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.1f}" if abs(v) >= 1 or v == 0 else f"{v:.3g}"
    return str(v)


def show(rows: list[dict], columns: list[str] | None = None, caption: str | None = None) -> Table:
    """Rows as a :class:`Table`; ``columns`` may name setting fields (``task``, ``cache``, ...)."""
    if columns is None:
        columns = ["method", *(m for m in METRICS if any(r.get(m) is not None for r in rows))]
    flat = [{c: _get(r, c) for c in columns} for r in rows]
    return Table(flat, columns, caption)


def show_paper(table_id: str, columns: list[str] | None = None, **where) -> Table:
    """One paper table, captioned with its number and provenance (``paper (LLaDA-8B-Instruct, A100)``)."""
    info = table_info(table_id)
    rows = paper_table(table_id, **where)
    cols = columns or ["method", *(k for k in ("task", "model", "gen_length", "cache") if _varies(rows, k)),
                       *(c for c in info["columns"] if c != "method")]
    rows = [{**r, "method": r["method"] + (" †" if r.get("dagger") else "")} for r in rows]
    return show(rows, cols, f"Table {info['number']} ({info['tex_label']}): {info['caption']}. "
                            f"Reported by the {paper_label(rows)}; † = without KV cache.")


def _varies(rows: list[dict], key: str) -> bool:
    return len({json.dumps(_get(r, key)) for r in rows}) > 1


def side_by_side(paper_rows: list[dict], our_rows: list[dict], keys: list[str] | tuple[str, ...] = ("method",),
                 metrics: tuple[str, ...] = METRICS, paper: str | None = None, ours: str | None = None,
                 as_markdown: bool = False, ours_only: tuple[str, ...] = ("tpf",)) -> Table | str:
    """Paper rows next to our rows, matched on ``keys``.

    ``keys`` name row or setting fields present in both (e.g. ``("task", "method")``); every paper
    row appears once, in the paper's order, followed by our rows that matched no paper row (one whose first
    key is a number goes before the first row with a larger one: our 256-token rows before the paper's 512). Each
    metric becomes two columns, ``"paper: TPS"`` and ``"ours: TPS"``; a missing value shows as "–".
    ``ours_only`` are measures the paper does not report (TPF by default): one ``"ours: TPF"`` column each.
    ``paper`` / ``ours`` are the provenance strings for the caption (defaults: :func:`paper_label`
    and "ours"). Returns a :class:`Table` (a list of dicts) or, with ``as_markdown``, its Markdown.
    """
    keys = tuple(keys)
    ours_by_key: dict[tuple, dict] = {}
    for r in our_rows:
        k = tuple(_get(r, key) for key in keys)
        if k in ours_by_key:
            raise ValueError(f"two of our rows share the key {dict(zip(keys, k))}")
        ours_by_key[k] = r
    columns = [*keys, *(f"{side}: {METRIC_TITLES.get(m, m)}" for m in metrics for side in ("paper", "ours")),
               *(f"ours: {METRIC_TITLES.get(m, m)}" for m in ours_only if m not in metrics)]
    metrics = (*metrics, *(m for m in ours_only if m not in metrics))
    out, used = [], set()
    for p in paper_rows:
        k = tuple(_get(p, key) for key in keys)
        o = ours_by_key.get(k)
        if o is not None:
            used.add(k)
        out.append(_joined(keys, k, p, o, metrics))
    for k, o in ours_by_key.items():
        if k not in used:
            out.insert(_place(out, keys[0], k[0]), _joined(keys, k, None, o, metrics))
    caption = f"paper = {paper or paper_label(paper_rows)}, as reported; ours = {ours or 'ours'}, measured here."
    table = Table(out, columns, caption)
    return table.to_markdown() if as_markdown else table


def _place(rows: list[dict], key: str, value) -> int:
    """Where an unmatched row goes: before the first row whose first key is a larger number (a generation
    length of ours between or below the paper's), else at the end."""
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)   # noqa: E731
    if number(value):
        for i, row in enumerate(rows):
            if number(row[key]) and row[key] > value:
                return i
    return len(rows)


def _joined(keys, k, p, o, metrics) -> dict:
    row = dict(zip(keys, k))
    for m in metrics:
        t = METRIC_TITLES.get(m, m)
        row[f"paper: {t}"] = None if p is None else p.get(m)
        row[f"ours: {t}"] = None if o is None else _get(o, m)
    return row   # keys the columns do not name (an ours-only measure's "paper: ...") are not shown


__all__ = ["numbers", "table_ids", "table_info", "paper_table", "figure_info", "overheads", "paper_label",
           "ours_label", "Table", "show", "show_paper", "side_by_side", "NUMBERS_FILE"]
