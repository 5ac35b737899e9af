"""The 500-problem controller table: ``python -m tspd controller-table`` writes
``results/embedded_controllers.json``, the summary of its harness runs in ``results/controller_table/``.

One row per (controller, CE, cache); :func:`markdown` is the controllers page's table of it, :func:`overview_table`
the book's five controllers without a cache and with the dual one.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tspd.decoding.names import display_name
from tspd.markdown import table as markdown_table
from tspd.records.rows import ResultsFile
from tspd.provenance import REPO_ROOT
from tspd.records.files import read_json, write_json

PATH = REPO_ROOT / "results" / "embedded_controllers.json"
RUNS = "controller_table"   # the runs' folder, beside the table
OVERVIEW = (("vanilla", False), ("tspd", True), ("fast-dllm", False), ("credit", False), ("learn2pd", False))


def runs_dir(path: str | Path | None = None) -> Path:
    """Where the runs of the table at ``path`` live: ``controller_table/`` beside it."""
    return Path(path or PATH).resolve().parent / RUNS


@dataclass(frozen=True)
class ControllerTable:
    """The stored table: its model, window, problem count and rows (each a dict as stored)."""
    model: str
    n: int
    gen_length: int | None
    rows: list[dict]
    path: Path

    def by_setting(self) -> dict[tuple, dict]:
        """(controller, ce, cache) -> row."""
        return {(r["controller"], r["ce"], r["cache"]): r for r in self.rows}

    def runs(self) -> dict[tuple, dict[str, dict]]:
        """(controller, ce, cache) -> {problem id: row} of each row's run."""
        folder = runs_dir(self.path)
        return {(r["controller"], r["ce"], r["cache"]): {x["id"]: x for x in ResultsFile(folder / f"{r['key']}.jsonl").load()}
                for r in self.rows}


def load(path: str | Path | None = None) -> ControllerTable:
    path = Path(path or PATH)
    data = read_json(path)
    return ControllerTable(data.get("model"), data["n"], data.get("gen_length"), data["rows"], path)


def load_dict(path: str | Path | None = None) -> dict:
    """The stored JSON itself (for :func:`markdown` and the tests that compare it whole)."""
    return read_json(path or PATH)


def save(table: dict, path: str | Path | None = None) -> Path:
    return write_json(path or PATH, table)


def _fmt(value, spec: str, none: str = "–") -> str:
    return none if value is None else format(value, spec)


def markdown(table: dict) -> str:
    """The README's table: accuracy with its Wilson 95 % interval, NFE, TPS, speedup, overheads, agreement."""
    pct = lambda v: "–" if v is None else f"{100 * v:.0f} %"   # noqa: E731
    header = ["controller", "CE", "cache", "acc. (%) [95 % CI]", "NFE", "TPS", "speedup", "ctrl % of fwd",
              "CE % of fwd", "same answer as vanilla", "same answer as no cache", "same text as no cache"]
    rows = [[r["controller"], "on" if r["ce"] else "off", r["cache"],
             f"{100 * r['accuracy']:.1f} [{100 * r['accuracy_95'][0]:.1f}, {100 * r['accuracy_95'][1]:.1f}]",
             f"{r['nfe']:.1f}", _fmt(r["tps"], ".1f"), _fmt(r["speedup_tps"], ".2f"),
             _fmt(r["controller_pct_of_forward"], ".1f"), _fmt(r["ce_pct_of_forward"], ".1f"),
             pct(r.get("same_answer_as_vanilla")), pct(r.get("same_answer_as_no_cache")),
             pct(r.get("same_text_as_no_cache"))] for r in table["rows"]]
    return "\n".join(markdown_table(header, rows))


def console(table: dict) -> str:
    """A compact plain-text view of the table for the terminal."""
    lines = [f"{'controller':10s} {'ce':3s} {'cache':6s} {'acc':>6s} {'nfe':>6s} {'tps':>7s} {'x':>5s} {'ctrl%':>6s} "
             f"{'ce%':>6s} {'=van':>5s} {'chr=van':>7s} {'chr=nocache':>11s}"]
    for r in table["rows"]:
        lines.append(f"{r['controller']:10s} {'on' if r['ce'] else 'off':3s} {r['cache']:6s} {r['accuracy']:6.3f} "
                     f"{r['nfe']:6.1f} {_fmt(r['tps'], '7.1f', '      –')} {_fmt(r['speedup_tps'], '5.2f', '    –')} "
                     f"{_fmt(r['controller_pct_of_forward'], '6.2f', '     –')} "
                     f"{_fmt(r['ce_pct_of_forward'], '6.2f', '     –')} "
                     f"{_fmt(r.get('same_text_as_vanilla'), '5.2f', '    –')} "
                     f"{_fmt(r.get('char_agreement_with_vanilla'), '7.2f', '      –')} "
                     f"{_fmt(r.get('char_agreement_with_no_cache'), '11.2f', '')}")
    return "\n".join(lines)


def accuracy_cell(row: dict) -> str:
    """``98.4 % (96.9-99.2 %)``: a row's accuracy and its Wilson 95 % interval."""
    lo, hi = row["accuracy_95"]
    return f"{100 * row['accuracy']:.1f} % ({100 * lo:.1f}-{100 * hi:.1f} %)"


def overview_table(table: ControllerTable | None = None) -> str:
    """A row per controller of :data:`OVERVIEW`: accuracy and forwards a problem without a cache and with the dual
    one (a dash where the table lacks the row), the model and n in the header."""
    table = table or load()
    rows, out = table.by_setting(), []
    for controller, ce in OVERVIEW:
        cells = []
        for cache in ("none", "dual"):
            r = rows.get((controller, ce, cache))
            cells += ["-", "-"] if r is None else [accuracy_cell(r), f"{r['nfe']:.1f}"]
        out.append([display_name(controller, ce), *cells])
    window = f", window {table.gen_length}" if table.gen_length else ""
    header = [f"`{table.model or 'model not recorded'}`{window}, n = {table.n} each", "accuracy, no cache", "forwards",
              "accuracy, dual cache", "forwards"]
    return "\n".join(markdown_table(header, out))
