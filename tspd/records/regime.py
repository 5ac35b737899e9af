"""A train-lm checkpoint's regime record: ``python -m tspd regime`` writes ``<checkpoint>/regime.json``
(committed for the zoo's models, ``tspd/zoo/<name>/regime.json``).

The command's :func:`tspd.measures.regime.measure` writes the record row by row as it measures
(resumable, :func:`save`) at :func:`path_of`; everything else reads it here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tspd.records.files import read_json, write_json

FILENAME = "regime.json"


def path_of(checkpoint: str | Path | None) -> Path:
    """The record of the checkpoint (a zoo name or a directory)."""
    from tspd.models.loading import resolve_path
    return Path(resolve_path(checkpoint)) / FILENAME


def save(path: str | Path, record: dict) -> Path:
    """The record as measured so far (rows in the plan's order)."""
    return write_json(path, record)


@dataclass(frozen=True)
class Regime:
    """The record's window, settings and rows; ``data`` is the record as stored (what ``targets`` reads)."""
    gen_length: int
    block_length: int
    n: int
    rows: dict[str, dict]
    data: dict
    path: Path


def load(checkpoint: str | Path | None) -> Regime | None:
    """The checkpoint's record; None where it has none (or there is no such checkpoint)."""
    from tspd.models.loading import CheckpointError
    try:
        path = path_of(checkpoint)
    except CheckpointError:
        return None
    if not path.is_file():
        return None
    d = read_json(path)
    return Regime(d["gen_length"], d["block_length"], d["config"]["n"], d["rows"], d, path)
