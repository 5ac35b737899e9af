"""A rows file: one JSON line per sample, each carrying its configuration's id, that survives a kill at any point.

Every evaluation writes its rows through :class:`ResultsFile` (``python -m tspd eval --out``, the run registry's
``results/runs/`` (:mod:`tspd.records.runs`), the controller table's runs); its summary beside it
(:meth:`ResultsFile.write_summary`). :func:`config_id` is the hash stored in every row, so rows of two
configurations are never mixed. What the rows add up to (accuracy, TPF, throughput) is
:mod:`tspd.eval.results`'s.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from tspd.records.files import append_jsonl, read_jsonl, write_atomic, write_json

try:
    import fcntl                        # POSIX: one writer per results file (Windows: no lock is taken)
except ImportError:                     # pragma: no cover
    fcntl = None


class ResultsError(ValueError):
    """An unusable results file (corrupt line, or rows from another configuration)."""


def config_id(config: dict) -> str:
    """A short stable hash of what a row's content depends on (stored in every row, checked on resume).

    Not the run registry's key (:attr:`tspd.eval.experiments.RunConfig.key`, which names a results
    file): the key also covers the device and batch size, because they change the timing a run
    reports, while this id leaves them out, because they do not change what a sample decodes to; so
    ``python -m tspd eval`` may resume a file on another machine or batch size, and the registry still
    keeps such runs in separate files.
    """
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]


def _needs_id(row) -> str | None:
    return None if isinstance(row, dict) and "id" in row else "a results row needs an 'id'"


class ResultsFile:
    """Append-only JSONL of per-sample rows that survives being killed at any point.

    A finished run's rows may be stored packed (:meth:`pack`: ``FILE.jsonl.gz`` in place of ``FILE.jsonl``; long
    answers shrink about 18x); the file reads the same either way, and an append unpacks it first."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.packed = self.path.with_name(self.path.name + ".gz")

    def exists(self) -> bool:
        return self.path.exists() or self.packed.exists()

    def load(self) -> list[dict]:
        """Rows already written. A last line without its newline (cut by a kill) is dropped and the
        file truncated to the last complete line; a corrupt complete line is an error."""
        source = self.packed if self.packed.exists() and not self.path.exists() else self.path
        rows, seen = [], set()
        for row in read_jsonl(source, partial_ok=True, missing_ok=True, error=ResultsError,
                              bad="corrupt results line ({msg}); fix or delete it", check=_needs_id):
            if row["id"] not in seen:     # a file written twice over (before the lock) counts each id once
                seen.add(row["id"])
                rows.append(row)
        return rows

    def pack(self) -> Path:
        """Store the rows gzipped (byte-stable: no timestamp in the header) and remove the plain file."""
        if self.path.exists():
            data = gzip.compress(self.path.read_bytes(), compresslevel=9, mtime=0)
            write_atomic(self.packed, lambda tmp: tmp.write_bytes(data))
            self.path.unlink()
        return self.packed

    def unpack(self) -> Path:
        """The plain file again (before appending to a packed run)."""
        if self.packed.exists() and not self.path.exists():
            data = gzip.decompress(self.packed.read_bytes())
            write_atomic(self.path, lambda tmp: tmp.write_bytes(data))
            self.packed.unlink()
        return self.path

    @contextmanager
    def lock(self):
        """Hold ``FILE.lock`` beside the rows file while writing them: a second writer stops at once with a
        :class:`ResultsError` naming the process that holds it (the lock goes with that process, even if killed)."""
        if fcntl is None:               # pragma: no cover
            yield
            return
        path = self.path.with_name(self.path.name + ".lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            f = open(path, "a+")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                holder = f.read().strip() or "another process"
                f.close()
                raise ResultsError(f"{self.path} is being written by {holder}: wait for it to finish, or give "
                                   "another output file") from None
            if path.exists() and os.stat(path).st_ino == os.fstat(f.fileno()).st_ino:
                break                   # not a lock file its last holder had just removed
            f.close()
        try:
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()} ({' '.join(sys.argv[:4]) or 'python'})\n")
            f.flush()
            yield
        finally:
            path.unlink(missing_ok=True)
            f.close()

    def append(self, rows: list[dict]) -> None:
        """Write rows as complete lines, then flush and fsync them."""
        self.unpack()
        append_jsonl(self.path, rows, fsync=True)

    def keep(self, rows: list[dict]) -> None:
        """Only ``rows`` stay (plain, replaced at once); the summary goes, since it no longer adds them up."""
        self.unpack()
        tmp = self.path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        append_jsonl(tmp, rows, fsync=True)
        tmp.replace(self.path)
        summary_path(self.path).unlink(missing_ok=True)

    def write_summary(self, summary: dict) -> Path:
        """The run's summary beside its rows (:func:`summary_path`)."""
        return write_json(summary_path(self.path), summary, indent=2)

    def read_summary(self) -> dict | None:
        path = summary_path(self.path)
        return json.loads(path.read_text()) if path.exists() else None


def summary_path(out: str | Path) -> Path:
    """``x.jsonl`` -> ``x.summary.json`` (other names get ``.summary.json`` appended)."""
    out = Path(out)
    stem = out.name[:-len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(stem + ".summary.json")


__all__ = ["ResultsFile", "ResultsError", "config_id", "summary_path"]
