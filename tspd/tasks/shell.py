"""``shell``: the shell game, an answer tracked one swap at a time (issue 83's serial design, by position).

The question hides a ball under one of :data:`CUPS` cups and lists numbered swaps of two cups; the answer writes,
after each swap, the cup the ball is under, then that last cup as the final answer::

    Cups 1-5. Ball under 2. Swaps: 1:13 2:25 3:34 4:12.
    1:2 2:5 3:5 4:5
    #### 5

Each written cup is one easy step from the cup written before it and the swap of the same number (a 5-by-10
table a small network learns): the swap is found by its number, a role the answer writes itself, not by a
content look-up keyed on what was just computed (``trail``'s links, which a 0.9M model did not begin to learn in
an hour: ``results/training/trail-t1``, ``-t2``). A cup ``h`` swaps ahead of the last one written needs ``h``
swaps composed in one forward, which a few layers do for small ``h`` only: committing ``k`` tokens a step writes
cups before the swaps between are applied, and the damage grows with ``k`` and with the game's length, as LLaDA-8B's
does on GSM8K (Sec. 3). Game lengths spread as :data:`LENGTH_WEIGHT` says (short games in most problems).

Graded as GSM8K is, on the final answer (``#### c``), so a slip the game undoes is forgiven; every token is one
token of a tokenizer with digits one per token. Splits are decided by a hash of the question, as in ``roster``.

With ``odds`` (:mod:`tspd.tasks.leaning_shell`), the answer's markers also draw a style, as ``styled``'s lines do:
every :data:`STYLE_ITEMS` items a run is *plain* (each joiner ``:``, each separator a space) with odds ``odds[0]``,
else each marker takes its first form with probability ``odds[1]`` (the second: ``=``, ``;``). Any form is right.
"""
from __future__ import annotations

import random

from tspd.tasks import arith, roster, splits, styled
from tspd.tasks.arith import extract_answer
from tspd.tasks.base import GeneratedTask
from tspd.tasks.splits import Splits

SPLIT_SIZES = {"test": 500, "traces": 2000}
GEN_LENGTH, BLOCK_LENGTH = roster.GEN_LENGTH, roster.BLOCK_LENGTH   # the paper's window and block (Table 1)
SUMMARY = "shell games tracked swap by swap, each cup one step from the one before it"  # the book's phrase
CUPS = 5             # cups 1..CUPS (one digit each)
SWAPS = (1, 11)      # swaps per game, inclusive (a game fits a 64-token window)
LENGTH_WEIGHT = 1.0  # a game of n swaps is drawn with weight 1 / n ** LENGTH_WEIGHT
FORMS = {"join": (":", "="), "sep": (" ", ";")}   # a marker's first and second form, one token each
STYLE_ITEMS = 3      # items a style run: the oracle's rises grow with it (n = 200: 2 / 3 / 4 -> 8 / 15 / 20 %)
_FIRST_FORMS = str.maketrans({second: first for first, second in FORMS.values()})   # any style read as plain


def track(start: int, swaps: list[tuple[int, int]]) -> list[int]:
    """The ball's cup after each swap, from cup ``start``."""
    out, cup = [], start
    for a, b in swaps:
        cup = b if cup == a else a if cup == b else cup
        out.append(cup)
    return out


def styled_items(rng: random.Random, cups: list[int], odds: tuple[float, float]) -> str:
    """The answer's line ``1:c 2:c ...`` with its markers drawn per run of :data:`STYLE_ITEMS` items: all first forms
    with odds ``odds[0]``, else each the first with probability ``odds[1]``."""
    out = []
    for i, c in enumerate(cups):
        if i % STYLE_ITEMS == 0:
            mixed = rng.random() >= odds[0]
        join, sep = (styled.draw_form(rng, mixed, FORMS[k], odds[1]) for k in ("join", "sep"))
        out.append(f"{i + 1}{join}{c}" + (sep if i < len(cups) - 1 else ""))
    return "".join(out)


def make_problem(rng: random.Random, odds: tuple[float, float] | None = None) -> dict:
    """One random game: ``{"template", "question", "answer", "final", "start", "swaps", "cups"}``; ``odds``:
    (P_PLAIN, P_MIXED_FIRST) of the markers' style, None for the plain answer."""
    lengths = range(SWAPS[0], SWAPS[1] + 1)
    n = rng.choices(lengths, weights=[1 / k ** LENGTH_WEIGHT for k in lengths])[0]
    start = rng.randint(1, CUPS)
    swaps = [tuple(sorted(rng.sample(range(1, CUPS + 1), 2))) for _ in range(n)]
    cups = track(start, swaps)
    question = (f"Cups 1-{CUPS}. Ball under {start}. Swaps: " + " ".join(f"{i}:{a}{b}" for i, (a, b) in
                                                                       enumerate(swaps, 1)) + ".")
    line = " ".join(f"{i}:{c}" for i, c in enumerate(cups, 1)) if odds is None else styled_items(rng, cups, odds)
    answer = f"{line}\n#### {cups[-1]}"
    return {"template": f"shell{n}", "question": question, "answer": answer, "final": str(cups[-1]), "start": start,
            "swaps": swaps, "cups": cups}


_SPLITS = Splits("shell", make_problem, SPLIT_SIZES)
split_of = splits.split_of
load_split = _SPLITS.load          # first n problems of "test" / "traces" (all when n is None); "train" needs n
iter_train = _SPLITS.train         # endless training problems, drawn with repeats
fingerprint = _SPLITS.fingerprint  # hash of the test split: written into a checkpoint's config.json
prompt = roster.prompt


def right(problem: dict, text: str) -> bool:
    """GSM8K's grade: the final ``#### c`` is the ball's last cup."""
    return extract_answer(text) == problem["final"]


def cups_written(text: str | None) -> list[str]:
    """The cups an answer writes before its ``####``, in order (``i:c`` items, any form of the markers)."""
    line = (text or "").partition("####")[0].translate(_FIRST_FORMS)
    return [item.partition(":")[2] for item in line.split()]


def line_accuracy(problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
    """Cups written right, at their place: ``{"line": [right, total]}`` over every swap of every game."""
    ok = total = 0
    for p, text in zip(problems, texts):
        got = cups_written(text)
        total += len(p["cups"])
        ok += sum(i < len(got) and got[i] == str(c) for i, c in enumerate(p["cups"]))
    return {"line": [ok, total]}


def template_accuracy(problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
    """Final answers right by game length: ``{"shell<n>": [right, total]}``."""
    return arith.template_accuracy(problems, texts, right)


class Shell(GeneratedTask):
    """Graded on the final ``#### c``, as GSM8K."""
    name = "shell"
    problems = staticmethod(load_split)

    def grade(self, sample: dict, completion: str) -> dict:
        got = extract_answer(completion)
        correct = got == sample["final"]
        reason = None if correct else ("no '#### c' answer in the output" if got is None else
                                       f"wrong answer: got {got}, expected {sample['final']}")
        return {"correct": correct, "reason": reason, "extracted": got, "gold": sample["final"]}
