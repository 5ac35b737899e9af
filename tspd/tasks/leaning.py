"""``leaning``: the ``styled`` task (:mod:`tspd.tasks.styled`) with lines that lean to their second forms.

The same rosters, hours and grading; only the style's odds differ: a line is plain with odds :data:`P_PLAIN` (0.3,
not 0.5) and a mixed line writes each marker in its first form with probability :data:`P_MIXED_FIRST` (0.4, not
0.6), so most lines lean to the second forms. On the task's exact posterior (``python -m tspd oracle-dynamics``,
``results/training/oracle``) these odds keep styled's right-but-unsure share and rises and add what styled's lack:
Fig. 1's gap (a marker's argmax can change as its line is written), 15.2 points against 1.4 there.
"""
from __future__ import annotations

from functools import partial

from tspd.tasks import splits, styled
from tspd.tasks.splits import Splits
from tspd.tasks.styled import (BLOCK_LENGTH, GEN_LENGTH, LINE, SPLIT_SIZES, answer_key, extract_answer,  # noqa: F401
                               fault, line_accuracy, line_fault, parse_line, plan_lines, prompt, right,
                               template_accuracy)

SUMMARY = "duty rosters whose lines lean to a drawn style and whose hours add up to a day's total"  # the book's phrase
P_PLAIN = 0.3        # odds that a line is plain (every marker in its first form)
P_MIXED_FIRST = 0.4  # a mixed line's marker takes its first form with this probability

make_problem = partial(styled.make_problem, odds=(P_PLAIN, P_MIXED_FIRST))
_SPLITS = Splits("leaning", make_problem, SPLIT_SIZES)
split_of = splits.split_of
load_split = _SPLITS.load          # first n problems of "test" / "traces" (all when n is None); "train" needs n
iter_train = _SPLITS.train         # endless training problems, drawn with repeats
fingerprint = _SPLITS.fingerprint  # hash of the test split: written into a checkpoint's config.json


class Leaning(styled.Styled):
    """Graded as ``styled`` (any style, any valid plan)."""
    name = "leaning"
    problems = staticmethod(load_split)


__all__ = ["make_problem", "load_split", "iter_train", "fingerprint", "prompt", "parse_line", "line_fault", "fault",
           "right", "line_accuracy", "template_accuracy", "answer_key", "Leaning", "P_PLAIN", "P_MIXED_FIRST", "LINE"]
