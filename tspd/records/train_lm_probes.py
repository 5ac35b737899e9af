"""A checkpoint's probes: ``python -m tspd train-lm`` writes ``<checkpoint>/probes.json`` (the probes of its
final evaluation's problems: what it copies, reads and computes, :mod:`tspd.training.probes`), and each
evaluation's probes as a point of its learning curve (``eval_log.csv``): a run without a final evaluation
(``--final-eval-n 0``, as tiny-roster's) has only those."""
from __future__ import annotations

from pathlib import Path

from tspd.models.loading import resolve_path
from tspd.records.files import read_json, read_log, write_json

FILENAME = "probes.json"
CURVE = "eval_log.csv"


def save(out: str | Path, probed: dict) -> Path:
    return write_json(Path(out) / FILENAME, probed)


def load(model: str | Path | None) -> dict:
    """The probes of a checkpoint (a zoo name or a directory); {} where it has none."""
    path = Path(resolve_path(model)) / FILENAME
    return read_json(path) if path.is_file() else {}


def curve_points(model: str | Path | None) -> tuple[list[dict], Path | None]:
    """A checkpoint's learning-curve points (its columns as ``read_log`` gives them, ``n`` the problems evaluated)
    and the file; ([], None) where it has no curve."""
    path = Path(resolve_path(model)) / CURVE
    rows = read_log(path) if path.is_file() else []
    return (rows, path) if rows else ([], None)


def last_curve_point(model: str | Path | None) -> tuple[dict, Path | None]:
    """The probes at a checkpoint's last learning-curve point (:func:`curve_points`) and the file; ({}, None) where
    it has no curve."""
    rows, path = curve_points(model)
    return (rows[-1], path) if rows else ({}, None)


def final(model: str | Path | None) -> tuple[dict, Path | None]:
    """A checkpoint's own probes: ``probes.json`` where its final evaluation wrote one, else its last curve point
    (:func:`last_curve_point`); and the file they come from."""
    path = Path(resolve_path(model)) / FILENAME
    return (read_json(path), path) if path.is_file() else last_curve_point(model)
