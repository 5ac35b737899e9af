"""``styled``: duty rosters whose lines draw a style and whose hours add up, so that answer tokens have a middle.

The ``roster`` task (:mod:`tspd.tasks.roster`) with two changes, each a source of the middle that the paper's
Section 3 finds on LLaDA-8B (right tokens that sit between 0.5 and 0.9 for several steps and climb before they are
sure, traces that move and then end on another token):

- **a style per line**: every line draws a style, *plain* with odds :data:`P_PLAIN` or *mixed*; a plain line
  writes every marker (the verb, each separator, the last joiner, the joiner of each chore and its hours) in its
  first form, a mixed line each marker in its first form with probability :data:`P_MIXED_FIRST`, else the second.
  A marker's first form is then likely (0.8) but not sure until others of its line are written, and each first
  form written is evidence (odds 1 : 0.6) that the line is plain: the line's markers climb, 0.80, 0.85, 0.89,
  0.93, as they are written, and the later ones cross 0.9 after a rise over several steps (CE's opportunity).
  Any form is right.
- **hours that add up**: every chore takes 2 or 3 hours and a day's hours add up to the total the question states,
  so ``k`` chores of each day take 3 (the places drawn at random). An hour's most likely value is 2 while few
  are written, and each 2 written makes a 3 more likely for the rest: these traces move, and some of them end on
  the other value (what a threshold commits too early and a history can warn of).

Every form and hour is one token of the roster tokenizer (`` will`` / `` each``, ``,`` / ``;``, `` and`` / ``;``,
`` `` / ``:`` before an hour, one digit per hour), so a line has the same number of tokens in any style and the day
count stays where ``roster`` models learn it by position (a lab prototype whose forms differed in length wrote
extra days; ``results/training/styled-g1``: with one style per answer the markers settle after the first line
and nothing in the middle is unsafe)::

    On day 1 they will cook 2, wash 3 and sweep 2.
    On day 2 they each cook:3; wash 2, sweep:2.

Grading reads the chores and the hours: every line's chores as ``roster``'s, each hour 2 or 3, a day's hours adding
up to the total. Any style, any mix of forms and any valid plan is right.
"""
from __future__ import annotations

import random
import re

from tspd.tasks import roster, splits
from tspd.tasks.arith import extract_answer  # noqa: F401 (the generated task interface)
from tspd.tasks.splits import Splits

SPLIT_SIZES = {"test": 500, "traces": 2000}
GEN_LENGTH, BLOCK_LENGTH = roster.GEN_LENGTH, roster.BLOCK_LENGTH   # the paper's window and block (Table 1)
SUMMARY = "duty rosters in a drawn style whose hours add up to a day's total"  # what the task is, in the book's prose
P_PLAIN = 0.5        # odds that a line is plain (every marker in its first form)
P_MIXED_FIRST = 0.6  # a mixed line's marker takes its first form with this probability: each first form is evidence
FORMS = {"verb": ("will", "each"), "sep": (", ", "; "), "last": (" and ", "; "), "item": (" ", ":")}   # first, second
STYLES = "PM"        # plain, mixed (a problem's ``styles``: one letter a line)
HOURS = (2, 3)   # a chore's hours; a day's total decides how many take 3


def draw_form(rng: random.Random, mixed: bool, forms: tuple[str, str], p_first: float = P_MIXED_FIRST) -> str:
    """A marker of two ``forms``: its first on a plain run; on a mixed one, the first with probability ``p_first``,
    else the second (``shell``'s styled answers draw theirs here too)."""
    return forms[int(mixed and rng.random() >= p_first)]


def _form(rng: random.Random, mixed: bool, kind: str, p_first: float = P_MIXED_FIRST) -> str:
    """A marker of ``kind`` (:data:`FORMS`), drawn by :func:`draw_form`."""
    return draw_form(rng, mixed, FORMS[kind], p_first)


def line(rng: random.Random, mixed: bool, day: int, chores: list[str], hours: list[int],
         p_first: float = P_MIXED_FIRST) -> str:
    """``On day <day> they <verb> <chore><item><hours><sep>...<last><chore><item><hours>.``, each marker drawn
    by :func:`_form`."""
    items = [f"{c}{_form(rng, mixed, 'item', p_first)}{h}" for c, h in zip(chores, hours)]
    text = f"On day {day} they {_form(rng, mixed, 'verb', p_first)} {items[0]}"
    for item in items[1:-1]:
        text += _form(rng, mixed, "sep", p_first) + item
    return text + _form(rng, mixed, "last", p_first) + items[-1] + "."


def day_hours(rng: random.Random, n: int, long: int) -> list[int]:
    """``n`` chores' hours: ``long`` of them (at places drawn at random) take 3, the others 2."""
    three = set(rng.sample(range(n), long))
    return [HOURS[i in three] for i in range(n)]


def make_problem(rng: random.Random, odds: tuple[float, float] = (P_PLAIN, P_MIXED_FIRST)) -> dict:
    """A ``roster`` problem whose question also states the day's hours, each line of its plan in a drawn style:
    ``roster``'s keys plus ``styles`` (``P`` plain or ``M`` mixed, a letter a line) and ``total`` (hours a day).
    ``odds``: (P_PLAIN, P_MIXED_FIRST), another task's (:mod:`tspd.tasks.leaning`)."""
    p = roster.make_problem(rng)
    n = len(p["chores"])
    total = HOURS[0] * n + rng.randint(1, n - 1)   # 1 .. n-1 chores of 3 hours: each day's places are free
    mixed = [rng.random() >= odds[0] for _ in range(p["days"])]
    lines = [line(rng, m, d + 1, rng.sample(p["chores"], n), day_hours(rng, n, total - HOURS[0] * n), odds[1])
             for d, m in enumerate(mixed)]
    question = p["question"] + f" Each chore takes 2 or 3 hours, and they work {total} hours a day in all."
    return dict(p, template=f"styled{n}", question=question, answer="\n".join(lines) + f"\n#### {p['days']}",
                styles="".join(STYLES[m] for m in mixed), total=total)


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
_ITEM = re.compile(r"(\w+)[ :](\d+)")


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
    if why := roster.chores_fault(problem, day, parsed and parsed[:2], text):
        return why
    hours = parsed[2]
    if any(h not in HOURS for h in hours):
        return f"day {day}: a chore of {next(h for h in hours if h not in HOURS)} hours"
    if sum(hours) != problem["total"]:
        return f"day {day}: {sum(hours)} hours, not {problem['total']}"
    return None


# the whole-answer grade (every line right, then the final) and the accuracies by line and by size, as roster's
_GRADES = roster.LineGrades(line_fault)
fault, right, line_accuracy, template_accuracy = (_GRADES.fault, _GRADES.right, _GRADES.line_accuracy,
                                                  _GRADES.template_accuracy)


class Styled(roster.Roster):
    """Graded on the whole answer (:func:`fault`): any style and any valid plan is right."""
    name = "styled"
    problems = staticmethod(load_split)
    fault = staticmethod(fault)


__all__ = ["make_problem", "load_split", "iter_train", "fingerprint", "prompt", "parse_line", "line_fault", "fault", "right",
           "line_accuracy", "template_accuracy", "answer_key", "Styled", "FORMS", "P_PLAIN", "P_MIXED_FIRST", "LINE"]
