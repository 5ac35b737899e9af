"""The README's two commands timed from a fresh clone: ``bash scripts/time_fresh_clone.sh`` writes
``results/fresh_clone.json`` through :func:`save`."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

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
