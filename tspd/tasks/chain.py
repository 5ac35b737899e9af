"""``chain``: long GSM8K-style word problems with the freedom real text has (a task for the regime model;
``results/training/`` holds the records of the models trained on it).

Why a second task: :mod:`tspd.tasks.arith` answers in 3-4 short lines that a small model writes in
one pass, so every parallel decoder finishes in two forwards and the book could not tell them apart.
LLaDA-8B on GSM8K writes 100-200 tokens in a 256-token window, and the first tokens of a sentence stay
uncertain until the text to their left is fixed (Fast-dLLM at threshold 0.9: 2.8 tokens per forward).
``chain`` asks for 5-10 steps whose answers fill roughly 80-200 tokens of a 256-token window, and each
solution is one of many equally right ones, drawn at random:

- independent steps in either order (the prices of three goods, two subtractions), and a running sum
  that follows the order the products were written in, so its intermediate values depend on that order;
- operands of ``+`` and ``*`` in either order;
- a few phrasings of each line (``Pens: 04*07 = 28`` or ``For the pens, 04*07 = 28``), and in some
  templates two solution paths (subtract the losses from each kind, or from the total).

Every line keeps ``arith``'s arithmetic, ``label aa op bb = cc`` with two-digit numbers, products of
single digits, every value in 0..99, and the final line ``#### N``, so the probes of
:mod:`tspd.training.probes` and arith's line parser read it unchanged. Grading is the final number:
any valid solution is right. Splits are decided by a hash of the question, as in ``arith``; ``test``
(500) and ``traces`` (2000) are fixed lists that training can never draw.
"""
from __future__ import annotations

import random
from typing import Callable

from tspd.tasks import arith
from tspd.tasks.arith import (altered, extract_answer, keeps_valid, line_accuracy,   # noqa: F401 (the task API)
                                    prompt, right, template_accuracy)
from tspd.tasks import splits
from tspd.tasks.splits import Splits

_LINE = arith._LINE                           # the line parser the probes use
SPLIT_SIZES = {"test": 500, "traces": 2000}   # fixed held-out sets; ``train`` is an infinite stream
GEN_LENGTH, BLOCK_LENGTH = 256, 32            # the paper's window and block (Table 1)
SUMMARY = "long synthetic GSM8K-style word problems"  # what the task is, in the book's prose
MIN_LINES, MAX_LINES = 5, 10                  # solution steps (GSM8K: 2-8)

_NAMES = arith._NAMES
_GOODS = ["pens", "mugs", "books", "pears", "hats", "cups", "kites", "maps", "socks", "plums", "bowls",
          "toys", "lamps", "cakes", "pies"]
_ITEMS = ["nuts", "beads", "cards", "coins", "shells", "stamps", "grapes", "candies", "marbles"]
_STOCK = ["apples", "eggs", "jars", "rolls", "boxes", "bottles"]
_VEHICLES = ["car", "bus", "boat", "bike", "train", "truck"]
_PLANTS = ["roses", "tulips", "beans", "onions", "trees", "lilies"]
_THINGS = ["lunch", "a book", "a game", "bus fare", "a gift", "snacks", "a ticket"]

Draft = tuple[str, list[str], int]


class _Redraw(Exception):
    """A drawn value left 0..99 (or a quotient was inexact): the template draws again."""


def _eq(rng: random.Random, a: int, op: str, b: int) -> tuple[str, int]:
    """``aa op bb = cc``, with ``+`` and ``*`` operands in either order; every value must lie in 0..99."""
    if op == "/" and (b == 0 or a % b):
        raise _Redraw
    c = arith._OPS[op](a, b)
    if not 0 <= c <= 99 or not 0 <= a <= 99 or not 0 <= b <= 99:
        raise _Redraw
    if op in "+*" and rng.random() < 0.5:
        a, b = b, a
    return f"{a:02d}{op}{b:02d} = {c:02d}", c


def _line(rng: random.Random, labels: list[str], a: int, op: str, b: int) -> tuple[str, int]:
    """One solution line: a phrasing drawn from ``labels``, then the equation."""
    text, c = _eq(rng, a, op, b)
    return rng.choice(labels) + text, c


def _products_and_sum(rng: random.Random, parts: list[tuple[list[str], int, int]]) -> tuple[list[str], int]:
    """Independent products in a random order, then their running sum in the order they were written."""
    order = rng.sample(range(len(parts)), len(parts))
    lines, values = [], []
    for i in order:
        labels, a, b = parts[i]
        text, c = _line(rng, labels, a, "*", b)
        lines.append(text)
        values.append(c)
    total = values[0]
    for k, v in enumerate(values[1:]):
        last = k == len(values) - 2
        text, total = _line(rng, ["Total: ", "In all: "] if last else ["So far: ", "Subtotal: "], total, "+", v)
        lines.append(text)
    return lines, total


def _listing(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _cap(word: str) -> str:
    return word[0].upper() + word[1:]


# --------------------------------------------------------------------------------------------
# Templates: each returns (question, solution lines, final), or raises _Redraw
# --------------------------------------------------------------------------------------------
def _shopping(rng: random.Random) -> Draft:
    (name, she), = rng.sample(_NAMES, 1)
    goods = rng.sample(_GOODS, rng.randint(3, 5))
    buys = [(g, rng.randint(2, 4), rng.randint(2, 9)) for g in goods]
    parts = [([f"{_cap(g)}: ", f"The {g} cost ", f"For the {g}, "], a, p) for g, a, p in buys]
    lines, total = _products_and_sum(rng, parts)
    if total > 89:
        raise _Redraw
    bill = rng.randrange(-(-(total + 1) // 10) * 10, 100, 10)
    text, change = _line(rng, ["Change: ", f"{she} gets back "], bill, "-", total)
    question = (f"{name} buys " + _listing([f"{a} {g} at ${p}" for g, a, p in buys]) +
                f". {she} pays with ${bill}. How much change does {she.lower()} get?")
    return question, lines + [text], change


def _trip(rng: random.Random) -> Draft:
    vehicle = rng.choice(_VEHICLES)
    legs = [(rng.randint(2, 4), rng.randint(2, 9)) for _ in range(rng.randint(3, 5))]
    parts = [([f"Leg {k + 1}: ", f"Part {k + 1} is "], h, v) for k, (h, v) in enumerate(legs)]
    lines, total = _products_and_sum(rng, parts)
    goal = rng.randint(total + 1, 99) if total < 99 else None
    if goal is None:
        raise _Redraw
    text, left = _line(rng, ["Left: ", "Still to go: "], goal, "-", total)
    question = (f"A {vehicle} goes " + _listing([f"{h} hours at {v} mph" for h, v in legs]) +
                f". The trip is {goal} miles. How many miles are left?")
    return question, lines + [text], left


def _stock(rng: random.Random) -> Draft:
    """A shop's stock through deliveries (boxes of n) and sales: products first in either order, or each
    just before it is added."""
    item = rng.choice(_STOCK)
    start = rng.randint(2, 40)
    events = [("get", rng.randint(2, 4), rng.randint(2, 9)) for _ in range(rng.randint(2, 4))] + \
             [("sell", rng.randint(2, 30), None) for _ in range(rng.randint(1, 3))]
    rng.shuffle(events)
    first = rng.random() < 0.5          # the solution path: every product first, or each where it is used
    lines, box = [], {}
    if first:
        for k in rng.sample([k for k, e in enumerate(events) if e[0] == "get"], sum(e[0] == "get" for e in events)):
            _, a, b = events[k]
            text, box[k] = _line(rng, ["Delivery: ", f"New {item}: "], a, "*", b)
            lines.append(text)
    value = start
    for k, (kind, a, b) in enumerate(events):
        if kind == "get":
            if k not in box:
                text, box[k] = _line(rng, ["Delivery: ", f"New {item}: "], a, "*", b)
                lines.append(text)
            text, value = _line(rng, ["Now: ", "Stock: "], value, "+", box[k])
        else:
            text, value = _line(rng, ["After the sale: ", "Now: "], value, "-", a)
        lines.append(text)
    said = [f"gets {a} boxes of {b}" if kind == "get" else f"sells {a}" for kind, a, b in events]
    question = f"A shop has {start} {item}. It " + _listing(said) + f". How many {item} are left?"
    return question, lines, value


def _wages(rng: random.Random) -> Draft:
    (name, she), = rng.sample(_NAMES, 1)
    r, h, s, d = (rng.randint(2, 9) for _ in range(4))
    spends = [(rng.randint(2, 20), t) for t in rng.sample(_THINGS, rng.randint(2, 4))]
    gift = rng.randint(2, 20) if rng.random() < 0.5 else None
    parts = [(["Hours: ", "For the hours, "], r, h), (["Days: ", "For the days, "], s, d)]
    lines, value = _products_and_sum(rng, parts)
    if gift is not None:
        text, value = _line(rng, ["With the gift: ", "Plus the gift: "], value, "+", gift)
        lines.append(text)
    for c, t in rng.sample(spends, len(spends)):          # the spendings in either order
        text, value = _line(rng, [f"After {t}: ", "Left: "], value, "-", c)
        lines.append(text)
    question = (f"{name} earns ${r} an hour for {h} hours and ${s} a day for {d} days" +
                (f", and gets a ${gift} gift" if gift is not None else "") + ". " + she + " spends " +
                _listing([f"${c} on {t}" for c, t in spends]) + ". How much money is left?")
    return question, lines, value


def _sharing(rng: random.Random) -> Draft:
    (name, she), = rng.sample(_NAMES, 1)
    item = rng.choice(_ITEMS)
    packs = [(rng.randint(2, 4), rng.randint(2, 9)) for _ in range(rng.randint(2, 4))]
    kids = rng.randint(2, 9)
    parts = [([f"Packs of {b}: ", f"The {b}-packs: "], a, b) for a, b in packs]
    lines, total = _products_and_sum(rng, parts)
    each = rng.randint(total // kids + 1, 99 // kids) if total // kids + 1 <= 99 // kids else None
    if each is None or each * kids - total < 2:
        raise _Redraw
    loose = each * kids - total
    text, value = _line(rng, ["With the loose ones: ", "All: "], total, "+", loose)
    text2, value = _line(rng, ["Each: ", "Per friend: "], value, "/", kids)
    question = (f"{name} has " + _listing([f"{a} packs of {b} {item}" for a, b in packs]) +
                f" and {loose} loose ones. {she} shares them equally among {kids} friends. How many does each get?")
    return question, lines + [text, text2], value


def _garden(rng: random.Random) -> Draft:
    """Two or three kinds of plant, losses of each, new plants: subtract each loss from its kind, or all of
    them from the total."""
    kinds = [(p, rng.randint(2, 9), rng.randint(2, 9)) for p in rng.sample(_PLANTS, rng.randint(2, 3))]
    kinds = [(p, r, c, rng.randint(1, r * c - 1)) for p, r, c in kinds]
    new = rng.randint(2, 30)
    lab = {p: [f"{_cap(p)}: ", f"The {p}: "] for p, *_ in kinds}
    if rng.random() < 0.5:     # per kind: rows, losses, then the running sum
        lines, values = [], []
        for p, r, c, d in rng.sample(kinds, len(kinds)):
            text, x = _line(rng, lab[p], r, "*", c)
            text2, y = _line(rng, [f"{_cap(p)} left: ", "Alive: "], x, "-", d)
            lines += [text, text2]
            values.append(y)
        value = values[0]
        for v in values[1:]:
            text, value = _line(rng, ["Together: ", "So far: "], value, "+", v)
            lines.append(text)
    else:                      # the total first, then the losses in any order
        lines, value = _products_and_sum(rng, [(lab[p], r, c) for p, r, c, _ in kinds])
        for d in rng.sample([d for *_, d in kinds], len(kinds)):
            text, value = _line(rng, ["After the losses: ", "Alive: "], value, "-", d)
            lines.append(text)
    text, value = _line(rng, ["With the new ones: ", "Now: "], value, "+", new)
    question = ("A garden has " + _listing([f"{r} rows of {c} {p}" for p, r, c, _ in kinds]) + ". " +
                _listing([f"{d} {p}" for p, *_, d in kinds]) + f" die, then {new} new plants go in. "
                "How many plants are there now?")
    return question, lines + [text], value


TEMPLATES: dict[str, Callable[[random.Random], Draft]] = {
    "shopping": _shopping, "trip": _trip, "stock": _stock, "wages": _wages, "sharing": _sharing,
    "garden": _garden,
}


# --------------------------------------------------------------------------------------------
# Problems and splits
# --------------------------------------------------------------------------------------------
def make_problem(rng: random.Random) -> dict:
    """One random problem with one of its solutions drawn at random: ``{"template", "question", "answer",
    "final"}`` (``answer`` ends ``#### N``)."""
    while True:
        kind = rng.choice(sorted(TEMPLATES))
        try:
            question, lines, final = TEMPLATES[kind](rng)
        except _Redraw:
            continue
        if not MIN_LINES <= len(lines) <= MAX_LINES:
            continue
        return {"template": kind, "question": question, "answer": "\n".join(lines) + f"\n#### {final}",
                "final": str(final)}


# The splits and the prompt work as arith's (tspd.tasks.splits: by question hash, fixed held-out lists)
_SPLITS = Splits("chain", make_problem, SPLIT_SIZES)
split_of = splits.split_of
load_split = _SPLITS.load          # first n problems of "test" / "traces" (all when n is None); "train" needs n
iter_train = _SPLITS.train         # endless training problems, drawn with repeats
fingerprint = _SPLITS.fingerprint  # hash of the test split: written into a checkpoint's config.json


# --------------------------------------------------------------------------------------------
# The benchmark interface (tspd.tasks.base.GeneratedTask): prompt, reference, grading
# --------------------------------------------------------------------------------------------
class Chain(arith.Arith):
    """Graded like ``arith``: the final ``#### N`` against the reference's; any valid solution is right."""
    name = "chain"
    problems = staticmethod(load_split)
