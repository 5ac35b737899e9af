"""What a checkpoint's own record says of its accuracy, as the text every page prints: no notebook,
README line or book page states a model's accuracy by hand.

The record is the checkpoint's ``evals.json`` (the held-out sweep ``python -m tspd train-lm`` writes
and ``TRAINING.md`` tabulates); its reference row is vanilla decoding at one token per step. The
notebooks print :func:`model_note` under their tables; the README and the book's introduction carry
:func:`accuracy_text` between ``<!-- model-accuracy -->`` markers, rewritten by
``scripts/model_accuracy.py`` (:func:`update`; ``scripts/ship_model.sh`` runs it when a model is shipped)
and checked by the tests.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tspd.eval.results import wilson
from tspd.models.loading import DEFAULT_MODEL, CheckpointError, resolve_path
from tspd.provenance import REPO_ROOT

COMPETENT = 0.5        # below this share of right answers, accuracy differences say little (the note says so)
MARKED = ("README.md", "book/intro.md")   # the pages that state the embedded model's accuracy
_MARK = re.compile(r"(<!-- model-accuracy -->)(.*?)(<!-- /model-accuracy -->)", re.S)


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


def vanilla_accuracy(model: str | Path | None = DEFAULT_MODEL) -> Accuracy | None:
    """The record's vanilla, one-token-per-step row; None where the checkpoint has no such record."""
    try:
        path = resolve_path(model) / "evals.json"
    except CheckpointError:
        return None
    if not path.is_file():
        return None
    row = next((r for r in json.loads(path.read_text()) if r.get("policy") == "vanilla"
                and (r.get("tokens_per_step") or 1) == 1 and "correct" in r), None)
    if row is None:
        return None
    source = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    return Accuracy(Path(str(model or DEFAULT_MODEL)).name, int(row["correct"]), int(row["n"]), str(source))


def accuracy_text(acc: Accuracy, bold: bool = True) -> str:
    """``**13.6 % of the 500 held-out problems** (95 % interval 10.9-16.9 %) with 1 token per step``."""
    lo, hi = acc.interval
    head = f"{100 * acc.share:.1f} % of the {acc.n} held-out problems"
    return f"{'**' + head + '**' if bold else head} (95 % interval {100 * lo:.1f}-{100 * hi:.1f} %) with 1 token per step"


def model_note(model: str | Path | None) -> str:
    """The sentence under every table measured on a checkpoint with a record ("" without one)."""
    acc = vanilla_accuracy(model)
    if acc is None:
        return ""
    note = f"The `{acc.name}` checkpoint answers {accuracy_text(acc, bold=False)} (its record: {acc.source})."
    if acc.share < COMPETENT:
        note += (" Far from a competent model, its accuracy columns carry little information; its NFE, TPS and "
                 "agreement with vanilla decoding show what each decoding costs.")
    return note


def fill(text: str, acc: Accuracy) -> str:
    """``text`` with every marked span rewritten from the record."""
    return _MARK.sub(lambda m: m.group(1) + accuracy_text(acc) + m.group(3), text)


def marked_spans(text: str) -> list[str]:
    return [m.group(2) for m in _MARK.finditer(text)]


def update(model: str | Path | None = DEFAULT_MODEL, pages: tuple[str, ...] = MARKED) -> Accuracy:
    """Rewrite the marked spans of ``pages`` (paths under the repository) from ``model``'s record."""
    acc = vanilla_accuracy(model)
    if acc is None:
        raise ValueError(f"{model} has no evals.json with a vanilla 1-token-per-step row")
    for name in pages:
        path = REPO_ROOT / name
        path.write_text(fill(path.read_text(), acc))
    return acc


__all__ = ["Accuracy", "vanilla_accuracy", "accuracy_text", "model_note", "fill", "marked_spans", "update", "MARKED"]
