"""A checkpoint's dynamics record: ``python -m tspd dynamics`` writes ``<checkpoint>/dynamics.json`` (committed for
the zoo's models, ``tspd/zoo/<name>/dynamics.json``): the command, revision, device, weights hash and settings,
one row of counts per prompt (:func:`tspd.measures.dynamics.prompt_measures`) and their summary. Written here only
(:func:`save`), batch by batch, so an interrupted measurement resumes; read here (:func:`load`).
"""
from __future__ import annotations

from pathlib import Path

from tspd.records.files import read_json, write_rows_json

FILENAME = "dynamics.json"


def path_of(checkpoint: str | Path | None) -> Path:
    """The record of the checkpoint (a zoo name or a directory)."""
    from tspd.models.loading import resolve_path
    return Path(resolve_path(checkpoint)) / FILENAME


def load(checkpoint: str | Path | None, path: str | Path | None = None) -> dict | None:
    """The checkpoint's record (or the one at ``path``); None where it has none."""
    from tspd.models.loading import CheckpointError
    try:
        path = Path(path) if path else path_of(checkpoint)
    except CheckpointError:
        return None
    return read_json(path) if path.is_file() else None


def save(path: str | Path, record: dict) -> Path:
    """Write the record (:func:`~tspd.records.files.write_rows_json`: its per-prompt rows one line each, about 400
    bytes a problem)."""
    return write_rows_json(path, record)


__all__ = ["FILENAME", "path_of", "load", "save"]
