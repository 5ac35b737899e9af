"""``styled``: duty rosters written in a per-answer phrasing style, so that answer tokens have a middle.

The ``roster`` task (:mod:`tspd.tasks.roster`) with one change: every answer draws a style, A with odds
:data:`P_A` or B, and every marker of every line (the verb, each separator, the last joiner) follows the
answer's style with probability :data:`P_FOLLOW`, else takes the other style's form::

    A: On day 1 they will cook, wash and sweep.
    B: On day 1 they each cook; wash; sweep.

Why (paper Section 3): on LLaDA-8B a token's confidence is not a step function; many right tokens sit between
0.5 and 0.9 for several steps and climb as the tokens around them are written. In ``roster`` every token is
certain at once or split between free chores, so a confidence history says nothing a threshold does not see. Here
a marker's right form is uncertain until other markers of its block are written, and each written marker is
evidence for the rest (the style is shared by the whole answer): its confidence climbs as they are written,
from the data's own odds, not from squeezed logits. The chores stay coupled as in ``roster``.

Every form is one token of the roster tokenizer (`` will`` / `` each``, ``,`` / ``;``, `` and`` / ``;``), so a
line has the same number of tokens in either style and the day count stays where ``roster`` models learn it by
position (a lab prototype whose forms differed in length wrote extra days: 42 % right after 55 minutes).
Grading reads the chores, as ``roster``'s: any style, any mix of forms and any valid plan is right.
"""
from __future__ import annotations

import random
import re

from tspd.tasks import arith, roster, splits
from tspd.tasks.arith import extract_answer  # noqa: F401 (the generated task interface)
from tspd.tasks.splits import Splits

SPLIT_SIZES = {"test": 500, "traces": 2000}
GEN_LENGTH, BLOCK_LENGTH = roster.GEN_LENGTH, roster.BLOCK_LENGTH   # the paper's window and block (Table 1)
SUMMARY = "duty rosters written in a style that each answer draws"  # what the task is, in the book's prose
P_A = 0.7        # odds of style A: the two right styles are not equally likely
P_FOLLOW = 0.85  # a marker follows its answer's style with this probability: evidence, not a rule
FORMS = {"verb": ("will", "each"), "sep": (", ", "; "), "last": (" and ", "; ")}   # style A's, style B's
STYLES = "AB"


def _form(rng: random.Random, style: int, kind: str) -> str:
    """A marker of ``kind``: the answer's style's form with probability P_FOLLOW, else the other one."""
    return FORMS[kind][style if rng.random() < P_FOLLOW else 1 - style]


def line(rng: random.Random, style: int, day: int, chores: list[str]) -> str:
    """``On day <day> they <verb> <chore><sep>...<last><chore>.``, each marker drawn by :func:`_form`."""
    text = f"On day {day} they {_form(rng, style, 'verb')} {chores[0]}"
    for chore in chores[1:-1]:
        text += _form(rng, style, "sep") + chore
    return text + _form(rng, style, "last") + chores[-1] + "."


def make_problem(rng: random.Random) -> dict:
    """A ``roster`` problem (the same question) with its plan written in a drawn style: ``roster``'s keys plus
    ``style`` (``A`` or ``B``)."""
    p = roster.make_problem(rng)
    style = 0 if rng.random() < P_A else 1
    lines = [line(rng, style, d + 1, rng.sample(p["chores"], len(p["chores"]))) for d in range(p["days"])]
    return dict(p, template=f"styled{len(p['chores'])}", answer="\n".join(lines) + f"\n#### {p['days']}",
                style=STYLES[style])


_SPLITS = Splits("styled", make_problem, SPLIT_SIZES)
split_of = splits.split_of
load_split = _SPLITS.load          # first n problems of "test" / "traces" (all when n is None); "train" needs n
iter_train = _SPLITS.train         # endless training problems, drawn with repeats
fingerprint = _SPLITS.fingerprint  # hash of the test split: written into a checkpoint's config.json
prompt = roster.prompt
plan_lines, answer_key = roster.plan_lines, roster.answer_key

# group 1: the day, group 2: the chores with their separators (the probes of tspd.training.roster_probes read it)
LINE = re.compile(r"On day (\d+) they (?:will|each) (.*)\.$")
_SPLIT = re.compile(r", |; | and ")


def parse_line(text: str) -> tuple[int, list[str]] | None:
    """``(day, [chore, ...])`` of one written line in either style (or a mix), or None when it is not one."""
    m = LINE.match(text.strip())
    if not m:
        return None
    chores = _SPLIT.split(m.group(2))
    if not all(re.fullmatch(r"\w+", c) for c in chores):
        return None
    return int(m.group(1)), chores


def fault(problem: dict, text: str) -> str | None:
    """Why ``text`` is not a right answer to ``problem`` (the first fault found), or None when it is."""
    return roster.fault(problem, text, parse_line)


def right(problem: dict, text: str) -> bool:
    """Whole-answer grade: every day's line right (each chore once, one per person) and the final line."""
    return fault(problem, text) is None


def line_accuracy(problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
    """Written day lines that are right: ``{"line": [right, total]}`` over every problem's days."""
    return roster.line_accuracy(problems, texts, parse_line)


def template_accuracy(problems: list[dict], texts: list[str]) -> dict[str, list[int]]:
    """Whole answers right by size: ``{"styled<n>": [right, total]}``."""
    return arith.template_accuracy(problems, texts, right)


class Styled(roster.Roster):
    """Graded on the whole answer (:func:`fault`): any style and any valid plan is right."""
    name = "styled"
    problems = staticmethod(load_split)
    fault = staticmethod(fault)


__all__ = ["make_problem", "load_split", "iter_train", "fingerprint", "prompt", "parse_line", "fault", "right",
           "line_accuracy", "template_accuracy", "answer_key", "Styled", "FORMS", "P_A", "P_FOLLOW", "LINE"]
