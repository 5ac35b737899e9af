"""``arith``: the embedded model's synthetic GSM8K-style task.

Templated word problems (shopping, sharing, rates, ages, saving, travel, baking, gardens,
collections) with 3-4 arithmetic steps whose intermediate results are reused by later steps. The
worked solution is written as GSM8K writes it without its calculator annotations: one short
sentence per step stating ``a op b = c``, one step per line, then the final line ``#### N``::

    Ann buys 4 pens at $7 each and 3 mugs at $9 each. She pays with $100. How much change ...?
    The pens cost 4*7 = 28.
    The mugs cost 3*9 = 27.
    She spends 28+27 = 55.
    The change is 100-55 = 45.
    #### 45

Numbers in questions stay small (operands <= 99 apart from round bills), every intermediate result is
a non-negative integer and division is used only when exact. Answers are about 50-120 characters
(at most ``MAX_ANSWER_CHARS``), so with a 128-token generation window and blocks of 32 they span 2-4
blocks followed by EOS padding. Questions are 80-141 characters.

Splits are decided by a hash of the question text, so ``train``, ``test`` and ``traces`` can never
share a question. ``test`` (500) and ``traces`` (2000) are fixed lists drawn from their own seeds;
they do not depend on how many training problems are drawn.

The prompt given to a model is the question text itself (:func:`prompt`): no template, no BOS.
"""
from __future__ import annotations

import hashlib
import random
import re
from functools import lru_cache
from typing import Callable, Iterator

SPLIT_SIZES = {"test": 500, "traces": 2000}   # fixed held-out sets; ``train`` is an infinite stream
MAX_ANSWER_CHARS = 124                        # longer drafts are redrawn: a 128-token window keeps >= 4 EOS
_BUCKETS = 1000                               # question hash mod 1000 decides the split:
_SPLIT_OF_BUCKET = (("test", 0, 50), ("traces", 50, 100))  # 5 % test, 5 % traces, 90 % train

# --------------------------------------------------------------------------------------------
# Vocabulary of the templates
# --------------------------------------------------------------------------------------------
_NAMES = [("Ann", "She"), ("Ben", "He"), ("Cara", "She"), ("Dan", "He"), ("Eva", "She"),
          ("Finn", "He"), ("Gina", "She"), ("Hugo", "He"), ("Ivy", "She"), ("Jack", "He"),
          ("Kate", "She"), ("Leo", "He"), ("Mia", "She"), ("Noah", "He"), ("Olga", "She"),
          ("Paul", "He"), ("Rosa", "She"), ("Sam", "He"), ("Tina", "She"), ("Omar", "He"),
          ("Lily", "She"), ("Raj", "He"), ("Zoe", "She"), ("Tom", "He")]
_GOODS = ["pens", "mugs", "books", "apples", "pears", "hats", "cups", "kites", "maps", "socks",
          "plums", "candles", "shirts", "bowls", "toys", "lamps"]
_SHARED = ["apples", "candies", "marbles", "stickers", "cards", "shells", "coins", "beads",
           "nuts", "grapes", "buttons", "stamps"]
_MADE = ["toys", "bottles", "boxes", "chairs", "bricks", "cans", "bolts", "caps"]
_MACHINES = ["machine", "robot", "factory", "printer", "press"]
_SAVED = ["bike", "game", "watch", "bag", "radio", "ball", "jacket"]
_VEHICLES = ["train", "car", "bus", "truck", "boat"]
_BAKED = ["cookies", "muffins", "buns", "tarts", "rolls"]
_PLANTS = ["tulips", "roses", "carrots", "onions", "beans", "trees"]
_COLLECTED = ["stickers", "stamps", "shells", "cards", "coins", "marbles"]
_BILLS = [20, 50, 100, 200]


def _names(rng: random.Random, k: int) -> list[tuple[str, str]]:
    return rng.sample(_NAMES, k)


def _div_pairs(n: int, lo: int, hi: int) -> list[int]:
    """Divisors d of n with lo <= d <= hi (exact division only)."""
    return [d for d in range(lo, hi + 1) if n % d == 0]


# --------------------------------------------------------------------------------------------
# Templates. Each returns (question, solution lines, final) or None to ask for a redraw.
# --------------------------------------------------------------------------------------------
Draft = tuple[str, list[str], int]


def _shopping(rng: random.Random) -> Draft | None:
    (name, she), = _names(rng, 1)
    g1, g2 = rng.sample(_GOODS, 2)
    a, b = rng.randint(2, 9), rng.randint(2, 9)
    p, q = rng.randint(2, 25), rng.randint(2, 25)
    x, y = a * p, b * q
    z = x + y
    steps = [f"The {g1} cost {a}*{p} = {x}.", f"The {g2} cost {b}*{q} = {y}.",
             f"{she} spends {x}+{y} = {z}."]
    q_text = f"{name} buys {a} {g1} at ${p} each and {b} {g2} at ${q} each."
    bills = [m for m in _BILLS if m >= z]
    if bills and rng.random() < 0.6:
        bill = rng.choice(bills[:2])
        steps.append(f"The change is {bill}-{z} = {bill - z}.")
        return f"{q_text} {she} pays with ${bill}. How much change does {she.lower()} get?", steps, bill - z
    return f"{q_text} How much does {she.lower()} spend in all?", steps, z


def _sharing(rng: random.Random) -> Draft | None:
    (name, she), = _names(rng, 1)
    item = rng.choice(_SHARED)
    a, b, c = rng.randint(3, 60), rng.randint(2, 9), rng.randint(3, 15)
    x = b * c
    y = a + x
    ks = _div_pairs(y, 2, 12)
    if not ks:
        return None
    k = rng.choice(ks)
    z = y // k
    question = (f"{name} has {a} {item}. {she} buys {b} packs of {c} {item}. {she} shares them "
                f"equally among {k} friends. How many {item} does each friend get?")
    steps = [f"{she} buys {b}*{c} = {x} {item}.", f"Now {she.lower()} has {a}+{x} = {y}.",
             f"Each friend gets {y}/{k} = {z}."]
    return question, steps, z


def _rates(rng: random.Random) -> Draft | None:
    machine, item = rng.choice(_MACHINES), rng.choice(_MADE)
    r, h1, h2 = rng.randint(4, 60), rng.randint(2, 9), rng.randint(2, 9)
    x, y = r * h1, r * h2
    z = x + y
    question = (f"A {machine} makes {r} {item} an hour. It works {h1} hours on Monday and "
                f"{h2} hours on Tuesday.")
    steps = [f"Monday: {r}*{h1} = {x}.", f"Tuesday: {r}*{h2} = {y}.", f"In all it makes {x}+{y} = {z}."]
    bad = rng.randint(2, 30)
    if bad < z and rng.random() < 0.5:
        steps.append(f"Good ones: {z}-{bad} = {z - bad}.")
        return f"{question} {bad} {item} are broken. How many good {item} are made?", steps, z - bad
    return f"{question} How many {item} does it make?", steps, z


def _ages(rng: random.Random) -> Draft | None:
    (a_name, _), (b_name, _), (c_name, _) = _names(rng, 3)
    a, d, m, k = rng.randint(3, 40), rng.randint(2, 30), rng.randint(2, 4), rng.randint(2, 20)
    x = a + d
    y = m * x
    times = {2: "twice", 3: "three times", 4: "four times"}[m]
    question = (f"{a_name} is {a} years old. {b_name} is {d} years older than {a_name}. "
                f"{c_name} is {times} as old as {b_name}.")
    steps = [f"{b_name} is {a}+{d} = {x} years old.", f"{c_name} is {m}*{x} = {y} years old."]
    if rng.random() < 0.5:
        steps.append(f"In {k} years {c_name} will be {y}+{k} = {y + k}.")
        return f"{question} How old will {c_name} be in {k} years?", steps, y + k
    s = a + x
    steps += [f"{a_name} and {b_name}: {a}+{x} = {s}.", f"All three: {s}+{y} = {s + y}."]
    return f"{question} What is the sum of their ages?", steps, s + y


def _saving(rng: random.Random) -> Draft | None:
    (name, she), = _names(rng, 1)
    thing = rng.choice(_SAVED)
    s, w = rng.randint(3, 40), rng.randint(2, 9)
    x = s * w
    c = rng.randint(5, 99)
    if c > x:
        return None
    g = rng.randint(5, 50)
    his, him = ("her", "her") if she == "She" else ("his", "him")
    question = (f"{name} saves ${s} a week for {w} weeks. {she} spends ${c} on a {thing}. "
                f"Then {his} aunt gives {him} ${g}. How much money does {name} have now?")
    steps = [f"{she} saves {s}*{w} = {x} dollars.", f"After the {thing}: {x}-{c} = {x - c}.",
             f"Now {she.lower()} has {x - c}+{g} = {x - c + g} dollars."]
    return question, steps, x - c + g


def _travel(rng: random.Random) -> Draft | None:
    vehicle = rng.choice(_VEHICLES)
    v1, h1, v2, h2 = rng.randint(10, 90), rng.randint(2, 9), rng.randint(10, 90), rng.randint(2, 9)
    x, y = v1 * h1, v2 * h2
    question = (f"A {vehicle} goes {v1} miles an hour for {h1} hours, then {v2} miles an hour "
                f"for {h2} hours.")
    steps = [f"First it goes {v1}*{h1} = {x} miles.", f"Then it goes {v2}*{h2} = {y} miles."]
    if rng.random() < 0.5:
        steps.append(f"In all it goes {x}+{y} = {x + y} miles.")
        return f"{question} How many miles does it go in all?", steps, x + y
    if x == y:
        return None
    hi, lo = max(x, y), min(x, y)
    which = "first" if x > y else "second"
    steps.append(f"That is {hi}-{lo} = {hi - lo} more miles.")
    return f"{question} How many more miles does it go in the {which} part?", steps, hi - lo


def _baking(rng: random.Random) -> Draft | None:
    (name, she), = _names(rng, 1)
    food = rng.choice(_BAKED)
    a, b, c = rng.randint(2, 9), rng.randint(4, 24), rng.randint(1, 20)
    x = a * b
    y = x - c
    if y <= 0:
        return None
    ks = _div_pairs(y, 2, 6)
    if not ks:
        return None
    k = rng.choice(ks)
    question = (f"{name} bakes {a} trays of {b} {food}. {she} eats {c} of them and packs the rest "
                f"into {k} equal boxes. How many {food} are in each box?")
    steps = [f"{a}*{b} = {x} baked.", f"{x}-{c} = {y} left.", f"{y}/{k} = {y // k} per box."]
    return question, steps, y // k


def _garden(rng: random.Random) -> Draft | None:
    plant = rng.choice(_PLANTS)
    r, c, d = rng.randint(2, 12), rng.randint(3, 25), rng.randint(1, 30)
    x = r * c
    if d >= x:
        return None
    y = x - d
    price = rng.randint(2, 9)
    question = (f"A garden has {r} rows of {c} {plant}. {d} of them die. The rest are sold at "
                f"${price} each. How much money does the garden make?")
    steps = [f"{r}*{c} = {x} {plant}.", f"{x}-{d} = {y} alive.", f"{y}*{price} = {y * price} dollars."]
    if y > 99:   # keep every product one small factor times a number below 100
        return None
    return question, steps, y * price


def _collection(rng: random.Random) -> Draft | None:
    (a_name, _), (b_name, _), (c_name, _) = _names(rng, 3)
    item = rng.choice(_COLLECTED)
    a, k, d = rng.randint(3, 60), rng.randint(2, 5), rng.randint(1, 40)
    x = k * a
    if d >= x:
        return None
    y = x - d
    times = {2: "twice", 3: "3 times", 4: "4 times", 5: "5 times"}[k]
    question = (f"{a_name} has {a} {item}. {b_name} has {times} as many. {c_name} has {d} fewer "
                f"than {b_name}. How many {item} do they have together?")
    s = a + x
    steps = [f"{b_name} has {k}*{a} = {x}.", f"{c_name} has {x}-{d} = {y}.",
             f"{a_name} and {b_name} have {a}+{x} = {s}.", f"All three have {s}+{y} = {s + y}."]
    return question, steps, s + y


TEMPLATES: dict[str, Callable[[random.Random], Draft | None]] = {
    "shopping": _shopping, "sharing": _sharing, "rates": _rates, "ages": _ages, "saving": _saving,
    "travel": _travel, "baking": _baking, "garden": _garden, "collection": _collection,
}


# --------------------------------------------------------------------------------------------
# Problems and splits
# --------------------------------------------------------------------------------------------
def make_problem(rng: random.Random) -> dict:
    """One random problem: ``{"template", "question", "answer", "final"}`` (``answer`` ends ``#### N``)."""
    while True:
        kind = rng.choice(sorted(TEMPLATES))
        draft = TEMPLATES[kind](rng)
        if draft is None:
            continue
        question, steps, final = draft
        assert final >= 0
        answer = "\n".join(steps) + f"\n#### {final}"
        if len(answer) > MAX_ANSWER_CHARS:
            continue
        return {"template": kind, "question": question, "answer": answer, "final": str(final)}


def prompt(problem: dict | str) -> str:
    """The text a model is conditioned on: the question itself (no template, no special tokens)."""
    return problem if isinstance(problem, str) else problem["question"]


def split_of(question: str) -> str:
    """``train``, ``test`` or ``traces``, decided by a hash of the question text only."""
    bucket = int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big") % _BUCKETS
    for name, lo, hi in _SPLIT_OF_BUCKET:
        if lo <= bucket < hi:
            return name
    return "train"


def _stream(split: str, seed: int | str) -> Iterator[dict]:
    """Problems of ``split`` only, in a fixed order for a given seed, without repeated questions."""
    rng = random.Random(f"arith-{split}-{seed}")
    seen: set[str] = set()
    while True:
        p = make_problem(rng)
        if p["question"] in seen or split_of(p["question"]) != split:
            continue
        seen.add(p["question"])
        yield p


@lru_cache(maxsize=None)
def _fixed_split(name: str) -> tuple[dict, ...]:
    stream = _stream(name, 0)
    out = []
    for i in range(SPLIT_SIZES[name]):
        p = next(stream)
        out.append({"id": f"arith-{name}-{i:04d}", **p})
    return tuple(out)


def load_split(name: str, n: int | None = None) -> list[dict]:
    """The first ``n`` problems of a split (all of ``test``/``traces`` when ``n`` is None).

    Each problem: ``id`` ("arith-test-0007"), ``question``, ``answer`` (worked solution ending
    ``#### N``), ``final`` (``N`` as a string) and ``template``. ``train`` needs ``n``.
    """
    if name in SPLIT_SIZES:
        problems = _fixed_split(name)
        if n is not None and n > len(problems):
            raise ValueError(f"split {name!r} has {len(problems)} problems, asked for {n}")
        return [dict(p) for p in problems[:n]]
    if name == "train":
        if n is None:
            raise ValueError("the train split is an infinite stream: pass n or use iter_train()")
        it = iter_train(0)
        return [next(it) for _ in range(n)]
    raise ValueError(f"unknown split {name!r}: expected train, test or traces")


def iter_train(seed: int = 0) -> Iterator[dict]:
    """Infinite stream of training problems; no question is ever in ``test`` or ``traces``."""
    for i, p in enumerate(_stream("train", seed)):
        yield {"id": f"arith-train{seed}-{i:07d}", **p}


def fingerprint() -> str:
    """Short hash of the test split's text: changes whenever the templates or the generator change.

    ``train-lm`` writes it into the checkpoint's ``config.json`` so a model trained on another version
    of the task can be recognised.
    """
    h = hashlib.sha256()
    for p in _fixed_split("test"):
        h.update((p["question"] + "\x00" + p["answer"] + "\x00").encode())
    return h.hexdigest()[:12]


_FINAL = re.compile(r"####\s*(-?\d[\d,]*(?:\.\d+)?)")


def extract_answer(text: str) -> str | None:
    """The number after the last ``####`` (commas dropped), or None; trailing junk is ignored."""
    last = None
    for m in _FINAL.finditer(text or ""):
        last = m
    if last is None:
        return None
    value = last.group(1).replace(",", "")
    if "." in value:
        value = value.rstrip("0").rstrip(".")
    return value
