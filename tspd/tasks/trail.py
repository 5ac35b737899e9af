"""``trail``: answers computed serially, one look-up at a time (the embedded model on LLaDA-8B's slope, issue 83).

The question lists where each of ``n`` letters leads (one cycle through all of them, its links in shuffled order)
and asks for a few trails, each from a start letter for a number of steps; the answer writes each trail, one line a
trail, and the number of trails::

    Links: K>D,A>F,D>A,F>K. Walk 3 trails: K:3,A:2,D:1.
    K>D>A>F
    A>F>K
    D>A
    #### 3

Every letter after a trail's start is one look-up, in the question's links, of the letter written before it; a
letter ``h`` places ahead of the last one written needs ``h`` look-ups in one forward. A small network does one
or two, not five, so its confidence in a letter firms up only as the letters before it are written, which is how
LLaDA-8B's does on GSM8K (Sec. 3; the regime record's slope): committing ``k`` tokens a step writes letters before
their context is there, and the damage grows with ``k`` and with how long the trails are. The lengths spread as
:data:`LENGTH_WEIGHT` says (short trails in most answers, long ones in a few), so answers break at different
``k``. The layout is fixed by the question (a trail's length is given, so every ``>`` and line end is known);
only the letters are serial, and none can be read off the question's order (its links are shuffled). A trail is
shorter than the cycle, so no letter repeats within a line and no line can be copied by position.

Each letter is one token of the roster tokenizer (no space before it, so ``F`` never merges into `` F``), ``>``,
``,``, ``:`` and the line end one each. Grading (:func:`right`) is the whole answer: every trail's line as the
links give it, no extra line, and ``#### D``. Splits are decided by a hash of the question, as in ``roster``.
"""
from __future__ import annotations

import random
import re
import string

from tspd.tasks import roster, splits
from tspd.tasks.arith import extract_answer  # noqa: F401 (the generated task interface)
from tspd.tasks.splits import Splits

SPLIT_SIZES = {"test": 500, "traces": 2000}
GEN_LENGTH, BLOCK_LENGTH = roster.GEN_LENGTH, roster.BLOCK_LENGTH   # the paper's window and block (Table 1)
SUMMARY = "trails through letter links, each letter a look-up of the one before it"  # the book's phrase
LETTERS = string.ascii_uppercase
CYCLE = (6, 12)      # letters in the links' cycle, inclusive
TRAILS = (3, 6)      # trails (= answer lines) per problem, inclusive
LENGTH_WEIGHT = 1.0  # a trail of L steps is drawn with weight 1 / L ** LENGTH_WEIGHT over 1 .. cycle - 1


def walk(links: dict[str, str], start: str, steps: int) -> list[str]:
    """``start`` and the ``steps`` letters the links lead to after it."""
    out = [start]
    for _ in range(steps):
        out.append(links[out[-1]])
    return out


def make_problem(rng: random.Random) -> dict:
    """One random problem: ``{"template", "question", "answer", "final", "links", "trails", "lines", "days"}``
    (``trails``: ``[(start, steps)]``; ``days``: the number of lines, the final answer)."""
    n, count = rng.randint(*CYCLE), rng.randint(*TRAILS)
    cycle = rng.sample(LETTERS, n)
    links = {a: cycle[(i + 1) % n] for i, a in enumerate(cycle)}
    lengths = range(1, n)
    trails = [(rng.choice(cycle), rng.choices(lengths, weights=[1 / s ** LENGTH_WEIGHT for s in lengths])[0])
              for _ in range(count)]
    shown = ",".join(f"{a}>{links[a]}" for a in rng.sample(cycle, n))
    question = f"Links: {shown}. Walk {count} trails: {','.join(f'{s}:{k}' for s, k in trails)}."
    lines = [">".join(walk(links, s, k)) for s, k in trails]
    return {"template": f"trail{count}", "question": question, "answer": "\n".join(lines) + f"\n#### {count}",
            "final": str(count), "links": links, "trails": trails, "lines": lines, "days": count}


_SPLITS = Splits("trail", make_problem, SPLIT_SIZES)
split_of = splits.split_of
load_split = _SPLITS.load          # first n problems of "test" / "traces" (all when n is None); "train" needs n
iter_train = _SPLITS.train         # endless training problems, drawn with repeats
fingerprint = _SPLITS.fingerprint  # hash of the test split: written into a checkpoint's config.json
prompt = roster.prompt
plan_lines = roster.plan_lines
answer_key = roster.answer_key     # the whole answer: its lines, spaces normalised


# a written trail line (not roster's LINE: its probes are tspd.training.trail_probes)
TRAIL_LINE = re.compile(r"^([A-Z](?:>[A-Z])*)$")


def line_fault(problem: dict, day: int, text: str) -> str | None:
    """Why ``text`` is not trail ``day``'s line (1-based), or None."""
    if not TRAIL_LINE.match(text.strip()):
        return f"trail {day}: not a trail line: {text.strip()[:60]!r}"
    got, want = text.strip().split(">"), problem["lines"][day - 1].split(">")
    if len(got) != len(want):
        return f"trail {day}: {len(got) - 1} steps, not {len(want) - 1}"
    wrong = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w) if got != want else None
    return None if wrong is None else f"trail {day}: letter {wrong + 1} is {got[wrong]}, not {want[wrong]}"


# the whole-answer grade (every line right, then the final) and the accuracies by line and by size, as roster's
_GRADES = roster.LineGrades(line_fault)
fault, right, line_accuracy, template_accuracy = (_GRADES.fault, _GRADES.right, _GRADES.line_accuracy,
                                                  _GRADES.template_accuracy)


def longest(problem: dict) -> int:
    """The most steps of one trail: how many look-ups the answer chains at most."""
    return max(k for _, k in problem["trails"])


class Trail(roster.Roster):
    """Graded on the whole answer (:func:`fault`): the trails are unique."""
    name = "trail"
    problems = staticmethod(load_split)
    fault = staticmethod(fault)
