"""The run registry's folder, ``results/runs/``: the one module that names, reads and writes its files.

One run (a :class:`tspd.eval.job.RunConfig`, named by its ``key``) keeps three files in a results folder
(``results/runs/`` unless a notebook's ``results_dir`` says otherwise)::

    <key>.jsonl          per-sample rows (a rows file, :class:`tspd.records.rows.ResultsFile`; the evaluation
                         harness appends them)
    <key>.summary.json   the harness's summary of the last call (its accuracy is a fraction)
    <key>.json           sidecar: the run's settings, the device name(s), the checkpoint fingerprint, versions

:mod:`tspd.eval.experiments` computes and reads runs through these functions; ``scripts/switch_book.py``
renames a run whose settings moved (:func:`move`), ``scripts/redo_disturbed.py`` drops rows to decode again
(:meth:`ResultsFile.keep`). Nothing else writes here.
"""
from __future__ import annotations

import time
from pathlib import Path

from tspd.provenance import REPO_ROOT, portable_path
from tspd.records.files import read_json, write_json
from tspd.records.rows import ResultsFile, summary_path

RUNS_DIR = REPO_ROOT / "results" / "runs"


def folder(results_dir: str | Path | None = None) -> Path:
    """``results_dir``, or the book's ``results/runs/`` where None or empty."""
    return Path(results_dir) if results_dir else RUNS_DIR


def rows_file(key: str, results_dir: str | Path | None = None) -> ResultsFile:
    """The run's rows file (plain or packed)."""
    return ResultsFile(folder(results_dir) / f"{key}.jsonl")


def stored(key: str, results_dir: str | Path | None = None) -> dict[str, dict]:
    """The run's stored rows by sample id (a torn last line is dropped)."""
    return {r["id"]: r for r in rows_file(key, results_dir).load()}


def sidecar_path(key: str, results_dir: str | Path | None = None) -> Path:
    return folder(results_dir) / f"{key}.json"


def read_sidecar(key: str, results_dir: str | Path | None = None) -> dict | None:
    path = sidecar_path(key, results_dir)
    return read_json(path) if path.exists() else None


def write_sidecar(key: str, meta: dict, results_dir: str | Path | None = None) -> Path:
    return write_json(sidecar_path(key, results_dir), meta)


def sidecars(results_dir: str | Path | None = None) -> list[dict]:
    """Every run's sidecar in the folder, by key."""
    return [read_json(p) for p in sorted(folder(results_dir).glob("*.json")) if p.stem.count(".") == 0]


def files(key: str, results_dir: str | Path | None = None) -> list[Path]:
    """The run's files that exist: its rows (plain or packed), their summary and its sidecar."""
    f = rows_file(key, results_dir)
    return [p for p in (f.path, f.packed, summary_path(f.path), sidecar_path(key, results_dir)) if p.exists()]


def retire(key: str, results_dir: str | Path | None = None) -> None:
    """Rename the run's files ``<key>.stale-<time>.*`` (kept for a look, never read again)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for p in files(key, results_dir):
        p.rename(p.with_name(p.name.replace(key, f"{key}.stale-{stamp}", 1)))


def move(old: str, new: str, meta: dict, config_id: str, row_config: dict,
         results_dir: str | Path | None = None) -> None:
    """File the run ``old`` under the key ``new`` (its settings changed in a way that leaves its rows as
    decoded, e.g. controller weights moved byte for byte): its rows carry ``config_id``, its sidecar is
    ``meta``, its summary names ``row_config``. A run already stored under ``new`` is replaced."""
    src, dest = rows_file(old, results_dir), rows_file(new, results_dir)
    moved = [dict(r, config=config_id) for r in src.load()]
    summary = src.read_summary()
    for f in (dest, src):
        for p in (f.path, f.packed, summary_path(f.path)):
            p.unlink(missing_ok=True)
    sidecar_path(old, results_dir).unlink(missing_ok=True)
    sidecar_path(new, results_dir).unlink(missing_ok=True)
    dest.append(moved)
    write_sidecar(new, dict(meta, key=new), results_dir)
    if summary is not None:
        dest.write_summary(dict(summary, config=row_config, config_id=config_id, out=portable_path(str(dest.path))))


__all__ = ["RUNS_DIR", "folder", "rows_file", "stored", "sidecar_path", "read_sidecar", "write_sidecar", "sidecars",
           "files", "retire", "move"]
