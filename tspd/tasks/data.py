"""Where evaluation data lives and how it is read (local JSONL files, or a ``datasets`` hub id).

Default data directory, first that applies: ``$TSPD_DATA_DIR``; ``<repo root>/../shared/data`` if it
exists; ``<repo root>/data``. The repo root is the parent of the ``tspd`` package directory. Expected
layout (the files of the shared data README)::

    gsm8k/train.jsonl  gsm8k/test.jsonl          math/test.jsonl  math/math500.jsonl
    humaneval/HumanEval.jsonl.gz                 mbpp/mbpp.jsonl
"""
from __future__ import annotations

import os
from pathlib import Path

from tspd.provenance import REPO_ROOT
from tspd.records.files import read_jsonl

ENV_VAR = "TSPD_DATA_DIR"


class TaskDataError(FileNotFoundError):
    """Evaluation data that is missing or malformed (the message is one line naming the path)."""


def default_data_dir() -> Path:
    """``$TSPD_DATA_DIR``, else ``<repo>/../shared/data`` if present, else ``<repo>/data``."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    shared = REPO_ROOT.parent / "shared" / "data"
    return shared if shared.is_dir() else REPO_ROOT / "data"


def data_file(data_dir: str | Path | None, *candidates: str) -> Path:
    """The first existing ``data_dir/<candidate>``; a one-line TaskDataError naming it otherwise."""
    root = Path(data_dir).expanduser() if data_dir else default_data_dir()
    for rel in candidates:
        path = root / rel
        if path.is_file():
            return path
    raise TaskDataError(f"missing evaluation data file {root / candidates[0]} "
                        f"(set {ENV_VAR} or pass --data-dir to the directory that holds it)")


def read_data(path: Path) -> list[dict]:
    """Rows of a ``.jsonl`` or ``.jsonl.gz`` data file (:func:`tspd.records.files.read_jsonl`); a bad line is a
    one-line TaskDataError."""
    return read_jsonl(path, error=TaskDataError)


def load_hub(source: str, split: str, config: str | None = None) -> list[dict]:
    """Rows of a Hugging Face ``datasets`` split (imported lazily; needs network or a local cache).

    ``source`` is a hub id, optionally ``id:config`` to choose a configuration other than ``config``.
    """
    if ":" in source:
        source, config = source.split(":", 1)
    try:
        import datasets
    except ImportError:
        raise TaskDataError(f"loading {source!r} needs the 'datasets' package (pip install 'tspd[hub]')") from None
    ds = datasets.load_dataset(source, config, split=split) if config else datasets.load_dataset(source, split=split)
    return [dict(row) for row in ds]
