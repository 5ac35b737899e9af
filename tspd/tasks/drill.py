"""``drill``: runs of ``chain``'s solution lines without their question, a share of ``chain``'s training batches.

Why: an ``arith`` model can compute every number from the question, whose layout fixes the answer's, and
need never read a line's own operands (``scripts/experiments/digit_probe.py`` measures whether it does). A ``chain``
model has to read them, since the order of lines and operands is free, and one trained on ``chain`` alone
does not form that skill in the runs ``results/training/`` records (they measure both). Without the question, the
only way to predict a result of ``aa op bb = cc`` is from the operands in its own line, and a running sum's
operands from the lines above it: the skill in its plainest form, at about a third of a ``chain``
sequence's positions (``train-lm --task chain --mix-tasks drill:SHARE``).

A drill is consecutive lines of one ``chain`` solution, from a random line on, as many as fit
:data:`GEN_LENGTH` (every character is at most one token). Its splits are ``chain``'s: ``train`` drills come
from ``chain``'s training stream only, ``test`` / ``traces`` from those fixed lists (for the probe).
It is a training mixture only: it has no final answer to grade.
"""
from __future__ import annotations

import random
from typing import Iterator

from tspd.tasks import chain

GEN_LENGTH = 96                         # about 3-5 lines of chain; a prompt of a few tokens
QUESTION = "Check the lines:"           # the same for every drill: nothing to compute from
MAX_CHARS = GEN_LENGTH - 8              # characters of a drill's answer: room for the EOS fill


def drill(problem: dict, rng: random.Random) -> dict:
    """Consecutive solution lines of a ``chain`` problem (never its ``#### N`` line), from a random one on."""
    lines = problem["answer"].split("\n")[:-1]
    start = rng.randrange(len(lines))
    kept, chars = [], 0
    for line in lines[start:]:
        chars += len(line) + bool(kept)
        if chars > MAX_CHARS:
            break
        kept.append(line)
    return {"id": f"drill-{problem['id']}", "template": problem["template"], "question": QUESTION,
            "answer": "\n".join(kept)}


def load_split(name: str, n: int | None = None) -> list[dict]:
    """Drills of the first ``n`` problems of ``chain``'s ``name`` split, each drawn from its problem's id."""
    return [drill(p, random.Random(p["id"])) for p in chain.load_split(name, n)]


def iter_train(seed: int | str = 0) -> Iterator[dict]:
    """Endless drills of ``chain``'s training problems (never a test or traces one)."""
    rng = random.Random(f"drill-{seed}")
    for p in chain.iter_train(f"drill-{seed}"):
        yield drill(p, rng)

