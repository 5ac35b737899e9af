"""A checkpoint's probes: ``python -m tspd train-lm`` writes ``<checkpoint>/probes.json`` (the probes of its
final evaluation's problems: what it copies, reads and computes, :mod:`tspd.training.probes`)."""
from __future__ import annotations

from pathlib import Path

from tspd.models.loading import resolve_path
from tspd.records.files import read_json, write_json

FILENAME = "probes.json"


def save(out: str | Path, probed: dict) -> Path:
    return write_json(Path(out) / FILENAME, probed)


def load(model: str | Path | None) -> dict:
    """The probes of a checkpoint (a zoo name or a directory); {} where it has none."""
    path = Path(resolve_path(model)) / FILENAME
    return read_json(path) if path.is_file() else {}
