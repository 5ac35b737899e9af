"""A checkpoint's CE audit: ``python -m tspd ce-audit`` writes ``<checkpoint>/ce_audit.json`` (committed for the zoo's
models): the command, revision, device, weights hash and settings, the audit's and the decode check's rows per
problem (:mod:`tspd.measures.ce_audit`) and their summaries. Written batch by batch (:func:`save`), so an interrupted
audit resumes; read here (:func:`load`).
"""
from __future__ import annotations

from pathlib import Path

from tspd.records.files import read_json, write_rows_json

FILENAME = "ce_audit.json"


def path_of(checkpoint: str | Path | None) -> Path:
    """The record of the checkpoint (a zoo name or a directory)."""
    from tspd.models.loading import resolve_path
    return Path(resolve_path(checkpoint)) / FILENAME


def load(checkpoint: str | Path | None, path: str | Path | None = None) -> dict | None:
    """The checkpoint's record (or the one at ``path``); None where it has none."""
    path = Path(path) if path else path_of(checkpoint)
    return read_json(path) if path.is_file() else None


def save(path: str | Path, record: dict) -> Path:
    """Write the record atomically, its per-problem rows one line each (as the dynamics record)."""
    return write_rows_json(path, record)
