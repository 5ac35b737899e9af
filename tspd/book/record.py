"""What a checkpoint's own record says of its accuracy, as the text every page prints: no notebook,
README line or book page states a model's accuracy by hand.

The record is the checkpoint's ``evals.json`` (:mod:`tspd.records.train_lm_evals`); its reference row is
vanilla decoding at one token per step. The notebooks print :func:`model_note` under their tables; the
README and the book's introduction carry :func:`accuracy_text` in their ``<!-- model-accuracy -->`` spans
(:mod:`tspd.book.prose`, written by ``python -m tspd fill-records``).
"""
from __future__ import annotations

from pathlib import Path

from tspd.records.train_lm_evals import Accuracy, vanilla_accuracy

COMPETENT = 0.5        # below this share of right answers, accuracy differences say little (the note says so)


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


__all__ = ["Accuracy", "vanilla_accuracy", "accuracy_text", "model_note"]
