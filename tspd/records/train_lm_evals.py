"""A checkpoint's held-out sweep: ``python -m tspd train-lm`` writes ``<checkpoint>/evals.json`` (one row per
decoding of its final evaluation, as measured; ``--eval-only`` rescores); ``TRAINING.md`` tabulates it.

Its reference row is vanilla decoding at one token per step (:func:`vanilla_accuracy`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tspd.stats import wilson
from tspd.models.loading import DEFAULT_MODEL, CheckpointError, resolve_path
from tspd.records.files import read_json, shown, write_json

FILENAME = "evals.json"


def path_in(out: str | Path) -> Path:
    """The record in a checkpoint or run directory."""
    return Path(out) / FILENAME


def load_rows(out: str | Path) -> list[dict]:
    """The rows in ``out`` ([] where there are none yet)."""
    path = path_in(out)
    return read_json(path) if path.is_file() else []


def save(out: str | Path, rows: list[dict]) -> Path:
    return write_json(path_in(out), rows)


@dataclass(frozen=True)
class Accuracy:
    """The reference row of a checkpoint's record: right answers out of ``n`` held-out problems."""
    name: str
    correct: int
    n: int
    source: str            # the record file, relative to the repository where it lies inside it

    @property
    def share(self) -> float:
        return self.correct / self.n

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.correct, self.n)


def load(model: str | Path | None = DEFAULT_MODEL) -> list[dict] | None:
    """The sweep of a checkpoint (a zoo name or a directory); None where it has no record."""
    try:
        path = path_in(resolve_path(model))
    except CheckpointError:
        return None
    return read_json(path) if path.is_file() else None


def vanilla_accuracy(model: str | Path | None = DEFAULT_MODEL) -> Accuracy | None:
    """The record's vanilla, one-token-per-step row; None where the checkpoint has no such record."""
    rows = load(model)
    row = next((r for r in rows or [] if r.get("policy") == "vanilla"
                and (r.get("tokens_per_step") or 1) == 1 and "correct" in r), None)
    if row is None:
        return None
    source = shown(path_in(resolve_path(model)))
    return Accuracy(Path(str(model or DEFAULT_MODEL)).name, int(row["correct"]), int(row["n"]), str(source))


def vanilla_steps(model: str | Path | None = DEFAULT_MODEL) -> list[dict]:
    """The record's vanilla rows at more than one token per step, most tokens per step first."""
    return sorted((r for r in load(model) or [] if r.get("policy") == "vanilla" and (r.get("tokens_per_step") or 1) > 1),
                  key=lambda r: -r["tokens_per_step"])
