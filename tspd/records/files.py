"""Reading and writing a record's JSON the one way every record module does."""
from __future__ import annotations

import json
from pathlib import Path

from tspd.provenance import REPO_ROOT


def read_json(path: str | Path):
    return json.loads(Path(path).read_text())


def write_json(path: str | Path, data, indent: int = 1) -> Path:
    """``data`` as indented JSON and a final newline (the layout of every committed record)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n")
    return path


def shown(path: str | Path) -> Path:
    """``path`` relative to the repository where it lies inside it (as pages cite a record)."""
    path = Path(path)
    return path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
