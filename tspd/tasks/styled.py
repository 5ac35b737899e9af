"""``styled``: duty rosters in a per-answer style with hours that add up, so that answer tokens have a middle.

The ``roster`` task (:mod:`tspd.tasks.roster`) with two changes, each a source of the middle that the paper's
Section 3 finds on LLaDA-8B (right tokens that sit between 0.5 and 0.9 for several steps, traces that move and
then end on another token):

- **a style**: every answer draws a style, A with odds :data:`P_A` or B, and every marker of every line (the verb,
  each separator, the last joiner) follows the answer's style with probability :data:`P_FOLLOW`, else takes the
  other style's form. A marker's form is uncertain until other markers are written, and each written marker is
  evidence for the rest: markers climb as they are written and sit, right, below 0.9 (any form is right).
- **hours that add up**: every chore takes 2 or 3 hours and a day's hours add up to the total the question states,
  so ``k`` chores of each day take 3 (the places drawn at random). An hour's most likely value is 2 while few
  are written, and each 2 written makes a 3 more likely for the rest: these traces move, and some of them end on
  the other value (what a threshold commits too early and a history can warn of).

Every form and hour is one token of the roster tokenizer (`` will`` / `` each``, ``,`` / ``;``, `` and`` / ``;``;
a space and one digit per hour), so a line has the same number of tokens in either style and the day count stays
where ``roster`` models learn it by position (a lab prototype whose forms differed in length wrote extra days)::

    On day 1 they will cook 2, wash 3 and sweep 2.
    On day 2 they each cook 3; wash 2; sweep 2.

Grading reads the chores and the hours: every line's chores as ``roster``'s, each hour 2 or 3, a day's hours adding
up to the total. Any style, any mix of forms and any valid plan is right.
"""
from __future__ import annotations

import random
import re

from tspd.tasks import arith, roster, splits
from tspd.tasks.arith import extract_answer  # noqa: F401 (the generated task interface)
from tspd.tasks.splits import Splits

SPLIT_SIZES = {"test": 500, "traces": 2000}
GEN_LENGTH, BLOCK_LENGTH = roster.GEN_LENGTH, roster.BLOCK_LENGTH   # the paper's window and block (Table 1)
SUMMARY = "duty rosters in a drawn style whose hours add up to a day's total"  # what the task is, in the book's prose
P_A = 0.7        # odds of style A: the two right styles are not equally likely
P_FOLLOW = 0.85  # a marker follows its answer's style with this probability: evidence, not a rule
FORMS = {"verb": ("will", "each"), "sep": (", ", "; "), "last": (" and ", "; ")}   # style A's, style B's
STYLES = "AB"
HOURS = (2, 3)   # a chore's hours; a day's total decides how many take 3


def _form(rng: random.Random, style: int, kind: str) -> str:
    """A marker of ``kind``: the answer's style's form with probability P_FOLLOW, else the other one."""
    return FORMS[kind][style if rng.random() < P_FOLLOW else 1 - style]


def line(rng: random.Random, style: int, day: int, chores: list[str], hours: list[int]) -> str:
    """``On day <day> they <verb> <chore> <hours><sep>...<last><chore> <hours>.``, each marker drawn by
    :func:`_form`."""
    items = [f"{c} {h}" for c, h in zip(chores, hours)]
    text = f"On day {day} they {_form(rng, style, 'verb')} {items[0]}"
    for item in items[1:-1]:
        text += _form(rng, style, "sep") + item
    return text + _form(rng, style, "last") + items[-1] + "."


def day_hours(rng: random.Random, n: int, long: int) -> list[int]:
    """``n`` chores' hours: ``long`` of them (at places drawn at random) take 3, the others 2."""
    three = set(rng.sample(range(n), long))
    return [HOURS[i in three] for i in range(n)]


def make_problem(rng: random.Random) -> dict:
    """A ``roster`` problem whose question also states the day's hours, its plan written in a drawn style:
    ``roster``'s keys plus ``style`` (``A`` or ``B``) and ``total`` (hours a day)."""
    p = roster.make_problem(rng)
    n = len(p["chores"])
    total = HOURS[0] * n + rng.randint(1, n - 1)   # 1 .. n-1 chores of 3 hours: each day's places are free
    style = 0 if rng.random() < P_A else 1
    lines = [line(rng, style, d + 1, rng.sample(p["chores"], n), day_hours(rng, n, total - HOURS[0] * n))
             for d in range(p["days"])]
    question = p["question"] + f" Each chore takes 2 or 3 hours, and they work {total} hours a day in all."
    return dict(p, template=f"styled{n}", question=question, answer="\n".join(lines) + f"\n#### {p['days']}",
                style=STYLES[style], total=total)


_SPLITS = Splits("styled", make_problem, SPLIT_SIZES)
split_of = splits.split_of
load_split = _SPLITS.load          # first n problems of "test" / "traces" (all when n is None); "train" needs n
iter_train = _SPLITS.train         # endless training problems, drawn with repeats
fingerprint = _SPLITS.fingerprint  # hash of the test split: written into a checkpoint's config.json
prompt = roster.prompt
plan_lines, answer_key = roster.plan_lines, roster.answer_key

# group 1: the day, group 2: the chores with their hours and separators (tspd.training.roster_probes reads it)
LINE = re.compile(r"On day (\d+) they (?:will|each) (.*)\.$")
_SPLIT = re.compile(r", |; | and ")
_ITEM = re.compile(r"(\w+) (\d+)")


def parse_line(text: str) -> tuple[int, list[str], list[int]] | None:
    """``(day, [chore, ...], [hours, ...])`` of one written line in either style (or a mix), or None when it is
    not one."""
    m = LINE.match(text.strip())
    if not m:
        return None
    items = [_ITEM.fullmatch(x) for x in _SPLIT.split(m.group(2))]
    if not all(items):
        return None
    return int(m.group(1)), [x.group(1) for x in items], [int(x.group(2)) for x in items]


def line_fault(problem: dict, day: int, text: str) -> str | None:
    """Why ``text`` is not a right line for day ``day`` of ``problem`` (its chores as ``roster``'s, its hours 2 or 3
    adding up to the day's total), or None."""
    parsed = parse_line(text)
    if why := roster.line_fault(problem, day, text, parse=lambda _: parsed and parsed[:2]):
        return why
    hours = parsed[2]
    if any(h not in HOURS for h in hours):
        return f"day {day}: a chore of {next(h for h in hours if h not in HOURS)} hours"
    if sum(hours) != problem["total"]:
        return f"day {day}: {sum(hours)} hours, not {problem['total']}"
    return None


def fault(problem: dict, text: str) -> str | None:
    """Why ``text`` is not a right answer to ``problem`` (the first fault found), or None when it is."""
    return roster.fault(problem, text, line_fault)


def right(problem: dict, text: str) -> bool:
    """Whole-answer grade: every day's line right (each chore once, one per person) and the final line."""
    return fault(problem, text) is None


def line_accuracy(problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
    """Written day lines that are right: ``{"line": [right, total]}`` over every problem's days."""
    return roster.line_accuracy(problems, texts, line_fault)


def template_accuracy(problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
    """Whole answers right by size: ``{"styled<n>": [right, total]}``."""
    return arith.template_accuracy(problems, texts, right)


class Styled(roster.Roster):
    """Graded on the whole answer (:func:`fault`): any style and any valid plan is right."""
    name = "styled"
    problems = staticmethod(load_split)
    fault = staticmethod(fault)


__all__ = ["make_problem", "load_split", "iter_train", "fingerprint", "prompt", "parse_line", "line_fault", "fault", "right",
           "line_accuracy", "template_accuracy", "answer_key", "Styled", "FORMS", "P_A", "P_FOLLOW", "LINE"]
