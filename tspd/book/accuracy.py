"""What a checkpoint's own record says of its accuracy, as the text every page prints: no notebook,
README line or book page states a model's accuracy by hand.

The record is the checkpoint's ``evals.json`` (:mod:`tspd.records.train_lm_evals`), or its ``regime.json``
(:mod:`tspd.measures.regime`) where train-lm wrote no final evaluation (tiny-roster's run stopped at its time
budget); its reference row is vanilla decoding at one token per step. The notebooks print :func:`model_note` under their tables; the
book's introduction and status page show it in their ``<!-- model-accuracy -->`` table
(:mod:`tspd.book.model_card`, written by ``python -m tspd fill-records``).
"""
from __future__ import annotations

from pathlib import Path

from tspd.measures import regime
from tspd.records import train_lm_evals
from tspd.records.files import shown
from tspd.records.train_lm_evals import Accuracy

COMPETENT = 0.5        # below this share of right answers, accuracy differences say little (the note says so)


def reference_accuracy(model: str | Path | None) -> Accuracy | None:
    """The checkpoint's vanilla one-token-per-step row: its final evaluation's, else its regime record's; None
    where it has neither."""
    acc = train_lm_evals.vanilla_accuracy(model)
    rec = regime.load(model) if acc is None else None
    if rec is None or "vanilla" not in rec.rows:
        return acc
    row = rec.rows["vanilla"]
    return Accuracy(Path(str(rec.data.get("model") or model)).name, int(row["correct"]), int(row["n"]),
                    str(shown(rec.path)))


def reference_steps(model: str | Path | None) -> list[dict]:
    """The same record's vanilla rows at more than one token per step (``tokens_per_step``, ``correct``, ``n``),
    most tokens per step first."""
    steps = train_lm_evals.vanilla_steps(model)
    rec = regime.load(model) if not steps else None
    if rec is None:
        return steps
    from tspd.measures.regime import RegimeConfig, plan
    fixed = [r for r in plan(RegimeConfig.from_dict(rec.data["config"]), rec.gen_length, rec.block_length)
             if r.kind == "fixed" and r.name in rec.rows]
    return sorted(({**rec.rows[r.name], "tokens_per_step": r.tokens_per_step} for r in fixed),
                  key=lambda r: -r["tokens_per_step"])


def accuracy_text(acc: Accuracy, bold: bool = True) -> str:
    """``**13.6 % of the 500 held-out problems** (95 % interval 10.9-16.9 %) with 1 token per step``."""
    lo, hi = acc.interval
    head = f"{100 * acc.share:.1f} % of the {acc.n} held-out problems"
    return f"{'**' + head + '**' if bold else head} (95 % interval {100 * lo:.1f}-{100 * hi:.1f} %) with 1 token per step"


def model_note(model: str | Path | None) -> str:
    """The sentence under every table measured on a checkpoint with a record ("" without one)."""
    acc = reference_accuracy(model)
    if acc is None:
        return ""
    note = f"The `{acc.name}` checkpoint answers {accuracy_text(acc, bold=False)} (its record: {acc.source})."
    if acc.share < COMPETENT:
        note += (" Far from a competent model, its accuracy columns carry little information; its NFE, TPS and "
                 "agreement with vanilla decoding show what each decoding costs.")
    return note


__all__ = ["Accuracy", "reference_accuracy", "reference_steps", "accuracy_text", "model_note"]
