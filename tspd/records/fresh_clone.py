"""The README's two commands timed from a fresh clone: ``bash scripts/time_fresh_clone.sh`` writes
``results/fresh_clone.json`` through :func:`save`."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from tspd.markdown import table as markdown_table
from tspd.provenance import REPO_ROOT
from tspd.records.files import read_json, write_json

PATH = REPO_ROOT / "results" / "fresh_clone.json"
SHOWN = "results/fresh_clone.json"


@dataclass(frozen=True)
class FreshClone:
    """Seconds of each stage; ``venv_seconds`` and ``shared`` are None in records made before they were kept."""
    command: str
    revision: str
    date: str
    device: str
    cores: int
    load_average_before: float
    tests_seconds: float
    tests_exit: int
    tests_summary: str
    book_seconds: float
    venv_seconds: float | None = None
    shared: bool | None = None

    def to_dict(self) -> dict:
        """As stored: the keys in the script's order, those a record lacks left out."""
        order = ("command", "revision", "date", "device", "cores", "load_average_before", "venv_seconds",
                 "tests_seconds", "tests_exit", "tests_summary", "book_seconds", "shared")
        data = asdict(self)
        return {k: data[k] for k in order if data[k] is not None}


def load(path: str | Path | None = None) -> FreshClone:
    return FreshClone(**read_json(path or PATH))


def save(record: FreshClone, path: str | Path | None = None) -> Path:
    return write_json(path or PATH, record.to_dict())


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def times_table(rec: FreshClone | None = None) -> str:
    """The README's two commands timed from a fresh clone, a row each (creating ``.venv`` apart where the record
    times it), and the record."""
    rec = rec or load()
    tests = rec.tests_summary.split(" in ")[0]
    if rec.venv_seconds is None:
        tests += "; creating `.venv` included"
    else:
        tests += f"; {_minutes(rec.venv_seconds + rec.tests_seconds)} with `.venv`"
    if rec.shared is False:
        tests += "; no `../shared` beside the clone: the tests that read it skipped"
    rows = [["create `.venv`", _minutes(rec.venv_seconds), ""],
            ["`bash scripts/test.sh`", _minutes(rec.tests_seconds), tests],
            ["`bash scripts/build_book.sh`, next in the same clone", _minutes(rec.book_seconds), ""],
            ["record", "", f"`{SHOWN}` (`{rec.command}`; 1-minute load average {rec.load_average_before} before)"]]
    return "\n".join(markdown_table([f"fresh clone at `{rec.revision}`, {rec.cores}-core {rec.device}, {rec.date}",
                                     "minutes", "result"], rows))
