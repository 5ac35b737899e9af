"""``arith``: the embedded model's synthetic GSM8K-style task.

Short templated word problems (shopping, leftovers, sharing, rates, ages, saving, travel, gardens) with
3-4 arithmetic steps whose intermediate results are reused by later steps. The worked solution is
written as GSM8K writes its steps with the prose stripped: one line per step ``a op b = c``, every number
in two digits, then the final line ``#### N``::

    Ann buys 4 pens at $7 and 3 cups at $5. She pays $60. Change?
    04*07 = 28
    03*05 = 15
    28+15 = 43
    60-43 = 17
    #### 17

The task is sized for a model trained on a 2-core CPU (the lever is the arithmetic and the sequence
length, not the model): products are single digit x single digit, divisions invert them, every sum,
difference and intermediate result lies in 0..99. Questions are at most ``MAX_QUESTION_CHARS``
characters; answers are ``MIN_ANSWER_CHARS``..``MAX_ANSWER_CHARS`` characters, so with the checkpoint's
64-token generation window and blocks of 32 every answer spans both blocks and leaves at least 4 EOS.

Splits are decided by a hash of the question text, so ``train``, ``test`` and ``traces`` can never
share a question. ``test`` (500) and ``traces`` (2000) are fixed lists drawn from their own seeds;
they do not depend on how many training problems are drawn.

The prompt given to a model is the question text itself (:func:`prompt`): no template, no BOS, no
chat template whatever the tokenizer. :class:`Arith` is the task as the evaluation harness sees it:
grading is exact match of the final ``#### N`` number against the reference solution's.
"""
from __future__ import annotations

import operator
import random
import re
from typing import Callable, Iterator

from tspd.tasks import splits
from tspd.tasks.base import GeneratedTask
from tspd.tasks.splits import Splits

SPLIT_SIZES = {"test": 500, "traces": 2000}   # fixed held-out sets; ``train`` is an infinite stream
GEN_LENGTH, BLOCK_LENGTH = 64, 32             # the window the task is sized for (written into checkpoints)
SUMMARY = "synthetic GSM8K-style word problems"  # what the task is, in the book's prose
MAX_QUESTION_CHARS = 72                       # short prompts: sequence cost is prompt + window
MIN_ANSWER_CHARS = BLOCK_LENGTH + 1           # every answer reaches the second block
MAX_ANSWER_CHARS = GEN_LENGTH - 4             # and leaves >= 4 EOS in the window

# --------------------------------------------------------------------------------------------
# Vocabulary of the templates
# --------------------------------------------------------------------------------------------
_NAMES = [("Ann", "She"), ("Ben", "He"), ("Cara", "She"), ("Dan", "He"), ("Eva", "She"),
          ("Finn", "He"), ("Gina", "She"), ("Hugo", "He"), ("Ivy", "She"), ("Jack", "He"),
          ("Kate", "She"), ("Leo", "He"), ("Mia", "She"), ("Noah", "He"), ("Olga", "She"),
          ("Paul", "He"), ("Rosa", "She"), ("Sam", "He"), ("Tina", "She"), ("Omar", "He"),
          ("Lily", "She"), ("Raj", "He"), ("Zoe", "She"), ("Tom", "He")]
_GOODS = ["pens", "mugs", "books", "pears", "hats", "cups", "kites", "maps", "socks", "plums",
          "bowls", "toys", "lamps"]
_ITEMS = ["nuts", "beads", "cards", "coins", "shells", "stamps", "grapes", "candies", "marbles"]
_MADE = ["toys", "cans", "boxes", "bolts", "caps", "bricks"]
_MACHINES = ["machine", "robot", "printer", "press"]
_VEHICLES = ["car", "bus", "boat", "bike", "train"]
_PLANTS = ["roses", "tulips", "beans", "onions", "trees"]

Draft = tuple[str, list[str], int]


def _digit(rng: random.Random) -> int:
    """A factor of a product: single digit, 2..9."""
    return rng.randint(2, 9)


_OPS: dict[str, Callable[[int, int], int]] = {"+": operator.add, "-": operator.sub, "*": operator.mul,
                                              "/": operator.floordiv}


def _eq(a: int, op: str, b: int) -> tuple[str, int]:
    """One solution line, every number written with two digits (``04*07 = 28``).

    Fixed width puts each digit of a result at the same offset from the digits it depends on in every
    line, which a small RoPE model learns sooner than variable-width arithmetic (``results/training/tiny-arith-fw/``
    compares the two).
    """
    c = _OPS[op](a, b)
    return f"{a:02d}{op}{b:02d} = {c:02d}", c


# --------------------------------------------------------------------------------------------
# Templates. Each returns (question, solution lines, final) or None to ask for a redraw.
# --------------------------------------------------------------------------------------------
def _shopping(rng: random.Random) -> Draft | None:
    (name, she), = rng.sample(_NAMES, 1)
    g1, g2 = rng.sample(_GOODS, 2)
    a, p, b, q = _digit(rng), _digit(rng), _digit(rng), _digit(rng)
    s1, x = _eq(a, "*", p)
    s2, y = _eq(b, "*", q)
    s3, z = _eq(x, "+", y)
    if z > 89:
        return None
    bill = rng.randrange(-(-(z + 1) // 10) * 10, 100, 10)
    s4, c = _eq(bill, "-", z)
    return (f"{name} buys {a} {g1} at ${p} and {b} {g2} at ${q}. {she} pays ${bill}. Change?",
            [s1, s2, s3, s4], c)


def _leftover(rng: random.Random) -> Draft | None:
    (name, she), = rng.sample(_NAMES, 1)
    item = rng.choice(_ITEMS)
    a, b, c = _digit(rng), _digit(rng), rng.randint(2, 40)
    s1, x = _eq(a, "*", b)
    s2, y = _eq(x, "+", c)
    if y > 99:
        return None
    d = rng.randint(2, y - 1)
    s3, z = _eq(y, "-", d)
    return (f"{name} has {a} bags of {b} {item} and {c} more. {she} eats {d}. How many left?",
            [s1, s2, s3], z)


def _sharing(rng: random.Random) -> Draft | None:
    (name, she), = rng.sample(_NAMES, 1)
    item = rng.choice(_ITEMS)
    a, b, k = _digit(rng), _digit(rng), _digit(rng)
    s1, x = _eq(a, "*", b)
    each = rng.randint(2, 9)
    c = k * each - x          # so that x + c splits evenly into k shares of at most 9
    if c < 2:
        return None
    s2, y = _eq(x, "+", c)
    s3, z = _eq(y, "/", k)
    return (f"{name} has {a} packs of {b} {item} and {c} more, shared by {k} kids. Each gets?",
            [s1, s2, s3], z)


def _rates(rng: random.Random) -> Draft | None:
    machine, item = rng.choice(_MACHINES), rng.choice(_MADE)
    r, h1, h2 = _digit(rng), _digit(rng), _digit(rng)
    s1, x = _eq(r, "*", h1)
    s2, y = _eq(r, "*", h2)
    s3, z = _eq(x, "+", y)
    if z > 99:
        return None
    return f"A {machine} makes {r} {item} an hour for {h1} hours, then {h2} hours. Total?", [s1, s2, s3], z


def _ages(rng: random.Random) -> Draft | None:
    (a_name, _), (b_name, _), (c_name, _) = rng.sample(_NAMES, 3)
    a, d, m = rng.randint(2, 7), rng.randint(2, 7), _digit(rng)
    s1, x = _eq(a, "+", d)
    if x > 9:
        return None
    s2, y = _eq(m, "*", x)
    k = rng.randint(2, 30)
    s3, z = _eq(y, "+", k)
    if z > 99:
        return None
    return (f"{a_name} is {a}. {b_name} is {d} years older. {c_name} is {m} times {b_name}. "
            f"{c_name} in {k} years?", [s1, s2, s3], z)


def _saving(rng: random.Random) -> Draft | None:
    (name, she), = rng.sample(_NAMES, 1)
    s, w = _digit(rng), _digit(rng)
    s1, x = _eq(s, "*", w)
    c = rng.randint(2, x - 1)
    s2, y = _eq(x, "-", c)
    g = rng.randint(2, 40)
    s3, z = _eq(y, "+", g)
    if z > 99:
        return None
    return (f"{name} saves ${s} a week for {w} weeks, spends ${c}, gets ${g}. How much now?",
            [s1, s2, s3], z)


def _travel(rng: random.Random) -> Draft | None:
    vehicle = rng.choice(_VEHICLES)
    h1, v1, h2, v2 = _digit(rng), _digit(rng), _digit(rng), _digit(rng)
    s1, x = _eq(h1, "*", v1)
    s2, y = _eq(h2, "*", v2)
    s3, z = _eq(x, "+", y)
    if z > 99:
        return None
    return f"A {vehicle} goes {h1} hours at {v1} mph and {h2} hours at {v2} mph. How far?", [s1, s2, s3], z


def _garden(rng: random.Random) -> Draft | None:
    plant = rng.choice(_PLANTS)
    r, c = _digit(rng), _digit(rng)
    s1, x = _eq(r, "*", c)
    d = rng.randint(1, x - 1)
    s2, y = _eq(x, "-", d)
    n = rng.randint(2, 40)
    s3, z = _eq(y, "+", n)
    if z > 99:
        return None
    return f"A garden has {r} rows of {c} {plant}. {d} die, {n} are planted. How many now?", [s1, s2, s3], z


TEMPLATES: dict[str, Callable[[random.Random], Draft | None]] = {
    "shopping": _shopping, "leftover": _leftover, "sharing": _sharing, "rates": _rates, "ages": _ages,
    "saving": _saving, "travel": _travel, "garden": _garden,
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
        assert 0 <= final <= 99
        answer = "\n".join(steps) + f"\n#### {final}"
        if len(question) > MAX_QUESTION_CHARS or not MIN_ANSWER_CHARS <= len(answer) <= MAX_ANSWER_CHARS:
            continue
        return {"template": kind, "question": question, "answer": answer, "final": str(final)}


def prompt(problem: dict | str) -> str:
    """The text a model is conditioned on: the question itself (no template, no special tokens)."""
    return problem if isinstance(problem, str) else problem["question"]


_SPLITS = Splits("arith", make_problem, SPLIT_SIZES)
split_of = splits.split_of


def load_split(name: str, n: int | None = None) -> list[dict]:
    """The first ``n`` problems of a split (all of ``test``/``traces`` when ``n`` is None).

    Each problem: ``id`` ("arith-test-0007"), ``question``, ``answer`` (worked solution ending
    ``#### N``), ``final`` (``N`` as a string) and ``template``. ``train`` needs ``n``.
    """
    return _SPLITS.load(name, n)


def iter_train(seed: int | str = 0) -> Iterator[dict]:
    """Infinite stream of training problems, drawn with repeats so that the template mix never drifts; no
    question is ever in ``test`` or ``traces``."""
    return _SPLITS.train(seed)


def fingerprint() -> str:
    """Short hash of the test split's text: changes whenever the templates or the generator change.

    ``train-lm`` writes it into the checkpoint's ``config.json`` so a model trained on another version
    of the task can be recognised.
    """
    return _SPLITS.fingerprint()


_LINE = re.compile(r"(\d+)\s*([-+*/])\s*(\d+)\s*=\s*(\d+)")
OPS = "*+-/"


def line_accuracy(problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
    """Exact solution lines by operation: ``{op: [right, total]}`` over the reference lines.

    A reference line ``a op b = c`` counts as right when the output's line at the same index is the
    same line. It says which arithmetic a model has learned (products, sums, differences, quotients)
    when the final answers alone say only that some step went wrong.
    """
    out = {op: [0, 0] for op in OPS}
    for p, text in zip(problems, texts):
        got = [m.groups() for m in map(_LINE.fullmatch, (text or "").strip().split("\n")) if m]
        for i, m in enumerate(_LINE.fullmatch(line) for line in p["answer"].split("\n")):
            if m is None:
                continue
            out[m.group(2)][1] += 1
            out[m.group(2)][0] += int(i < len(got) and got[i] == m.groups())
    return out


def template_accuracy(problems: list[dict], texts: list[str], grade=None) -> dict[str, list[int]]:
    """Answers right by template: ``{template: [right, total]}``, templates in sorted order; ``grade(problem,
    text)`` is the task's grade (default :func:`right`, the final number).

    An average over templates hides a template the model never learned: one the training stream draws
    too rarely can fail on nearly every problem while every other template is right.
    """
    out: dict[str, list[int]] = {}
    for p, text in zip(problems, texts):
        k = out.setdefault(p["template"], [0, 0])
        k[0] += int((grade or right)(p, text))
        k[1] += 1
    return dict(sorted(out.items()))


def altered(problem: dict, rng: random.Random, partial: bool = False) -> dict | None:
    """The problem with line 1's result replaced by another value and the solution redone from it.

    Every later operand that copies an earlier result carries the new value, every later result is
    recomputed, and the final line repeats the last one: a solution that is wrong about the question but
    follows what its lines say. Training on a few of these (``train-lm --alter-frac``) rewards reading the
    written lines over recomputing a number from the question. ``clean_chars`` is where line 1's result
    ends (training keeps the answer clean up to there). None when an operand's source is ambiguous (equal
    to a question number and to an earlier result) or no replacement keeps every number in 0..99 with
    exact quotients.

    ``partial``: the new value is any two-digit number, the first one drawn, and the solution is redone
    only as far as it stays valid. At the line it breaks (a negative difference, an inexact quotient, a
    result over 99) that line's operands are written with the values they copy, and ``scored_chars``
    ends the answer there: what follows (the old rest) is for the window's length only and is not to be
    learned. These teach copying a written value wherever it leads, which the full ones cannot: most
    values break some line (the counterfactual of :mod:`tspd.training.probes` draws them too).
    """
    parsed = _sources(problem)
    if parsed is None:
        return None
    lines, sources = parsed
    results = [int(c) for _, _, _, c in lines]
    values = [rng.choice([v for v in range(10, 100) if v != results[0]])] if partial else rng.sample(range(100), 100)
    for x in values:
        if x == results[0]:
            continue
        new, broken = _redo(lines, sources, x)
        if broken is None or partial:
            return {**problem, **_rewrite(problem["answer"], new, broken)}
    return None


def _rewrite(answer: str, new: list[tuple[int, int, int]], broken: int | None) -> dict:
    """The answer text with each line's operands and result replaced by ``new``'s, in place (a line's
    label and layout kept), and the final ``#### N`` by the last result. With a ``broken`` line, only its
    operands are replaced and ``scored_chars`` ends where its result begins; the text after is kept."""
    out, at, ends = [], 0, {}
    for k, m in enumerate(_LINE.finditer(answer)):
        if k >= len(new):
            break
        va, vb, c = new[k]
        groups = (1, 3) if k == broken else (4,) if k == 0 else (1, 3, 4)
        for g, v in zip((1, 3, 4), (va, vb, c)):
            if g in groups:
                out += [answer[at:m.start(g)], f"{v:02d}"]
                at = m.end(g)
        ends[k] = sum(map(len, out)) + (m.end(4) - at if k != broken else 0)
        if k == broken:
            scored = sum(map(len, out)) + m.start(4) - at
    if broken is not None:
        return {"answer": "".join(out) + answer[at:], "final": None, "clean_chars": ends[0], "scored_chars": scored}
    final = re.search(r"####\s*\d+\s*$", answer)
    text = "".join(out) + answer[at:final.start()] + f"#### {new[-1][2]}"
    return {"answer": text, "final": str(new[-1][2]), "clean_chars": ends[0]}


def keeps_valid(problem: dict, x: int) -> bool:
    """Whether ``x`` as line 1's result, carried into the lines that copy it, leaves every later line a
    valid one (no negative difference, inexact quotient or result over 99): the values :func:`altered`
    draws without ``partial``. False when an operand's source is ambiguous."""
    parsed = _sources(problem)
    return parsed is not None and _redo(*parsed, x)[1] is None


def _sources(problem: dict) -> tuple[list[tuple[str, ...]], list[list[int | None]]] | None:
    """The solution's lines and, per line and operand, the index of the earlier line whose result it
    copies (None: a question number); None when a copy is ambiguous (also a number of the question)."""
    lines = [m.groups() for m in _LINE.finditer(problem["answer"])]
    asked = {int(n) for n in re.findall(r"\d+", problem["question"])}
    results = [int(c) for _, _, _, c in lines]
    sources = []
    for k, (a, _, b, _) in enumerate(lines):
        src = []
        for v in (int(a), int(b)):
            earlier = [j for j in range(k) if results[j] == v]
            if earlier and v in asked:
                return None
            src.append(earlier[-1] if earlier else None)
        sources.append(src)
    return lines, sources


def _redo(lines, sources, x: int) -> tuple[list[tuple[int, int, int]], int | None]:
    """Each line's ``(operand, operand, result)`` redone from line 1's result ``x`` as far as they stay valid,
    and the index of the line that breaks (None when every line holds); a broken line is the last of the
    list, with the operands it copies and no result."""
    a, _, b, _ = lines[0]
    new = [(int(a), int(b), x)]
    for k in range(1, len(lines)):
        a, op, b, _ = lines[k]
        va, vb = (new[j][2] if j is not None else int(v) for j, v in zip(sources[k], (a, b)))
        if (op == "/" and (vb == 0 or va % vb)) or (op == "-" and va < vb) or _OPS[op](va, vb) > 99:
            return new + [(va, vb, None)], k
        new.append((va, vb, _OPS[op](va, vb)))
    return new, None


def reordered(problem: dict, rng: random.Random) -> dict:
    """The problem with the operands of each ``+`` and ``*`` line swapped with probability 1/2.

    Both orders are right, so a model trained on these is unsure which operand comes first until one
    is written: the kind of dependence between tokens that decoding several of them in one step can
    break (``07*07 = 28`` from ``04*07`` and ``07*04``), which is what parallel decoders are judged on.
    The final answer, the line lengths and an altered problem's ``clean_chars`` are unchanged.
    """
    def swap(m: re.Match) -> str:
        a, op, b, c = m.groups()
        return f"{b}{op}{a} = {c}" if op in "+*" and rng.random() < 0.5 else m.group(0)

    return {**problem, "answer": _LINE.sub(swap, problem["answer"])}


_FINAL = re.compile(r"####\s*(-?\d[\d,]*(?:\.\d+)?)")


def right(problem: dict, text: str) -> bool:
    """The grade of a generated task's answer: here the final ``#### N`` equals the reference's."""
    return extract_answer(text) == problem["final"]


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


# --------------------------------------------------------------------------------------------
# The benchmark interface (tspd.tasks.base.GeneratedTask): prompt, reference, grading
# --------------------------------------------------------------------------------------------
class Arith(GeneratedTask):
    """Graded on the final ``#### N``."""
    name = "arith"

    @staticmethod
    def problems(split: str) -> list[dict]:
        return load_split(split)   # looked up when called: a test may stand a stub in for the generator

    def grade(self, sample: dict, completion: str) -> dict:
        gold, pred = extract_answer(sample["answer"]), extract_answer(completion)
        correct = pred is not None and pred == gold
        if correct:
            reason = None
        elif pred is None:
            reason = "no '#### N' answer in the output"
        else:
            reason = f"wrong answer: got {pred}, expected {gold}"
        return {"correct": correct, "reason": reason, "extracted": pred, "gold": gold}
