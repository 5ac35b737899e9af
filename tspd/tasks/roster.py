"""``roster``: duty rosters whose answer tokens are coupled (the embedded model where parallel decoding costs).

A question names 3-5 people, as many chores and 3-7 days; the answer gives one line a day with every chore
once, in the order of the question's names (the first chore is the first person's)::

    Ann, Ben, Cara and Dan share four chores: cook, wash, sweep and shop. For 3 days each of them does one
    chore a day and every chore is done each day. Give each day's chores in the order of their names.
    On day 1 they will wash, cook, shop and sweep.
    On day 2 they will cook, sweep, wash and shop.
    On day 3 they will ...
    #### 3

Any permutation of the chores is a right line (ParallelBench's "shuffle" family, Kang et al., 2025), so a
line's chores are each uncertain until the others are written and must agree with them: decoding two of one
line's chores in the same step picks each from its own marginal and often picks one twice. The other tokens are
fixed by the question's layout (``On day k they will``, the punctuation, the final ``#### D`` = the number of
days). The chores of a problem are the first ``n`` of :data:`CHORES` in that order: every constraint is then
positional, which a 1M-parameter model learns on a CPU. The names vary the questions and appear in no answer:
an answer ``Ann will wash, Ben will cook, ...`` asks the model to copy the k-th name of the question, which a
0.9M model does not learn in 30 CPU-minutes, though it learns every chore's dependency on the others
(``results/training/roster-t1``).

Grading (:func:`right`) is the whole answer: every day's line present, in order, with as many chores as
people, each chore exactly once, and the final ``#### D``. Splits are decided by a hash of the question, as
in ``arith``; ``test`` (500) and ``traces`` (2000) are fixed lists that training never draws.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

from tspd.tasks import arith, splits
from tspd.tasks.arith import extract_answer
from tspd.tasks.base import GeneratedTask
from tspd.tasks.splits import Splits

SPLIT_SIZES = {"test": 500, "traces": 2000}
GEN_LENGTH, BLOCK_LENGTH = 256, 32          # the paper's window and block (Table 1)
SUMMARY = "duty rosters whose chores must agree within a day"  # what the task is, in the book's prose
PEOPLE = (3, 5)                             # people (= chores) per problem, inclusive
DAYS = (3, 7)                               # days (= lines) per problem, inclusive
NAMES = ["Ann", "Ben", "Cara", "Dan", "Eva", "Finn", "Gina", "Hugo", "Ivy", "Jack"]
CHORES = ["cook", "wash", "sweep", "shop", "dust"]
_COUNT = {3: "three", 4: "four", 5: "five"}


def _listing(words: list[str]) -> str:
    return ", ".join(words[:-1]) + f" and {words[-1]}"


def line(day: int, chores: list[str]) -> str:
    """``On day <day> they will <chore>, ... and <chore>.``"""
    return f"On day {day} they will {_listing(chores)}."


def make_problem(rng: random.Random) -> dict:
    """One random problem with one of its plans drawn at random: ``{"template", "question", "answer", "final",
    "people", "chores", "days"}``."""
    n, days = rng.randint(*PEOPLE), rng.randint(*DAYS)
    people, chores = rng.sample(NAMES, n), CHORES[:n]
    question = (f"{_listing(people)} share {_COUNT[n]} chores: {_listing(chores)}. For {days} days each of them "
                f"does one chore a day and every chore is done each day. Give each day's chores in the order of "
                f"their names.")
    lines = [line(d + 1, rng.sample(chores, n)) for d in range(days)]
    return {"template": f"roster{n}", "question": question, "answer": "\n".join(lines) + f"\n#### {days}",
            "final": str(days), "people": people, "chores": chores, "days": days}


_SPLITS = Splits("roster", make_problem, SPLIT_SIZES)
split_of = splits.split_of
load_split = _SPLITS.load          # first n problems of "test" / "traces" (all when n is None); "train" needs n
iter_train = _SPLITS.train         # endless training problems, drawn with repeats
fingerprint = _SPLITS.fingerprint  # hash of the test split: written into a checkpoint's config.json


def prompt(problem: dict | str) -> str:
    return problem if isinstance(problem, str) else problem["question"]


# --------------------------------------------------------------------------------------------
# Grading the whole answer
# --------------------------------------------------------------------------------------------
# group 1: the day, group 2: the chores with their separators (the probes of tspd.training.roster_probes read it)
LINE = re.compile(r"On day (\d+) they will (.*)\.$")


def parse_line(text: str) -> tuple[int, list[str]] | None:
    """``(day, [chore, ...])`` of one written line, or None when it is not a roster line."""
    m = LINE.match(text.strip())
    if not m:
        return None
    head, _, last = m.group(2).rpartition(" and ")
    chores = (head.split(", ") if head else []) + [last]
    if not all(re.fullmatch(r"\w+", c) for c in chores):
        return None
    return int(m.group(1)), chores


def chores_fault(problem: dict, day: int, parsed: tuple[int, list[str]] | None, text: str) -> str | None:
    """Why a line ``text`` parsed as ``(day, chores)`` (None: not a line) is not right for day ``day``, or None."""
    if parsed is None:
        return f"day {day}: not a roster line: {text.strip()[:60]!r}"
    d, chores = parsed
    if d != day:
        return f"day {day}: the line says day {d}"
    if len(chores) != len(problem["people"]):
        return f"day {day}: {len(chores)} chores for {len(problem['people'])} people"
    extra = [c for c in chores if c not in problem["chores"]]
    if extra:
        return f"day {day}: {extra[0]!r} is not one of the chores"
    twice = sorted({c for c in chores if chores.count(c) > 1})
    if twice:
        return f"day {day}: {twice[0]!r} given twice"
    return None


def line_fault(problem: dict, day: int, text: str) -> str | None:
    """Why ``text`` is not a right line for day ``day`` of ``problem``, or None."""
    return chores_fault(problem, day, parse_line(text), text)


def plan_lines(text: str | None) -> list[str]:
    """The non-empty lines an answer writes before its ``####``."""
    return [s for s in (text or "").partition("####")[0].strip().split("\n") if s.strip()]


def fault(problem: dict, text: str, line_fault=line_fault) -> str | None:
    """Why ``text`` is not a right answer to ``problem`` (the first fault found), or None when it is
    (``line_fault``: a task's :func:`line_fault`)."""
    lines, sep = plan_lines(text), "####" in (text or "")
    days = problem["days"]
    for day in range(1, days + 1):
        if day > len(lines):
            return f"day {day} is missing"
        if why := line_fault(problem, day, lines[day - 1]):
            return why
    if len(lines) > days:
        return f"{len(lines) - days} line(s) after day {days}"
    if not sep or extract_answer(text) != problem["final"]:
        return f"no final '#### {problem['final']}'"
    return None


def answer_key(text: str) -> str:
    """What two answers must share to be the same answer: the whole plan (its lines, spaces normalised)."""
    return "\n".join(" ".join(s.split()) for s in (text or "").partition("####")[0].strip().split("\n"))


def right(problem: dict, text: str) -> bool:
    """Whole-answer grade: every day's line right (each chore once, one per person) and the final line."""
    return fault(problem, text) is None


def line_accuracy(problems: list[dict], texts: list[str], line_fault=line_fault) -> dict[str, list[int]]:
    """Written day lines that are right: ``{"line": [right, total]}`` over every problem's days (``line_fault``:
    a task's :func:`line_fault`)."""
    ok = total = 0
    for p, text in zip(problems, texts):
        lines = plan_lines(text)
        for day in range(1, p["days"] + 1):
            total += 1
            ok += day <= len(lines) and line_fault(p, day, lines[day - 1]) is None
    return {"line": [ok, total]}


def template_accuracy(problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
    """Whole answers right by size: ``{"roster<n>": [right, total]}``."""
    return arith.template_accuracy(problems, texts, right)


@dataclass(frozen=True)
class LineGrades:
    """The grades of a task whose answer is one line per day then ``#### N`` (``styled``, ``trail``), from its
    ``line_fault``: the generated tasks' ``fault``, ``right``, ``line_accuracy`` and ``template_accuracy``, each as
    roster's with that task's line fault."""
    line_fault: Callable[[dict, int, str], str | None]

    def fault(self, problem: dict, text: str) -> str | None:
        return fault(problem, text, self.line_fault)

    def right(self, problem: dict, text: str) -> bool:
        return self.fault(problem, text) is None

    def line_accuracy(self, problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
        return line_accuracy(problems, texts, self.line_fault)

    def template_accuracy(self, problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
        return arith.template_accuracy(problems, texts, self.right)


# --------------------------------------------------------------------------------------------
# The benchmark interface (tspd.tasks.base.GeneratedTask): prompt, reference, grading
# --------------------------------------------------------------------------------------------
class Roster(GeneratedTask):
    """Graded on the whole answer (:func:`fault`): any valid plan is right."""
    name = "roster"
    problems = staticmethod(load_split)
    fault = staticmethod(fault)         # why an answer is wrong (a variant of the task names its own)

    def grade(self, sample: dict, completion: str) -> dict:
        why = self.fault(sample, completion)
        return {"correct": why is None, "reason": why, "extracted": extract_answer(completion),
                "gold": sample["final"]}
