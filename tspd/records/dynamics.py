"""A checkpoint's dynamics record: ``python -m tspd dynamics`` writes ``<checkpoint>/dynamics.json`` (committed for
the zoo's models, ``tspd/zoo/<name>/dynamics.json``): the command, revision, device, weights hash and settings,
one row of counts per prompt (:func:`tspd.measures.dynamics.prompt_measures`) and their summary. Written here only
(:func:`save`), batch by batch, so an interrupted measurement resumes; read here (:func:`load`).
"""
from __future__ import annotations

import json
from pathlib import Path

from tspd.records.files import read_json, write_text_atomic

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
    """Write the record (atomically: a kill leaves the previous batch's record): its settings and summary indented,
    its per-prompt rows one line each (about 400 bytes a problem)."""
    head = {k: v for k, v in record.items() if k != "rows"}
    rows = ",\n".join("  " + json.dumps(r, separators=(",", ":")) for r in record.get("rows", []))
    text = json.dumps(head, indent=1)[:-2] + ',\n "rows": [\n' + rows + "\n ]\n}\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, text)


__all__ = ["FILENAME", "path_of", "load", "save"]
