"""``leaning_shell``: the ``shell`` game (:mod:`tspd.tasks.shell`) with answers whose markers lean to a drawn style.

The cups are computed one swap at a time, as in ``shell`` (issue 83's slope); the markers between them (each
joiner ``:`` / ``=``, each separator `` `` / ``;``) draw a style per run of :data:`tspd.tasks.shell.STYLE_ITEMS`
items with ``leaning``'s odds (:mod:`tspd.tasks.leaning`): a run is plain with odds :data:`P_PLAIN`, else each
marker takes its first form with probability :data:`P_MIXED_FIRST`. A marker is then right whatever form it takes,
but sure only once its run's first markers are written: Section 3's middle (right but unsure, rises before 0.9)
added to a slope, without coupling any answer's correctness to a joint choice::

    Cups 1-5. Ball under 2. Swaps: 1:13 2:25 3:34 4:12.
    1:2 2:5 3=5;4:5
    #### 5

On the exact posterior (a perfect model, cups certain; design ``leaning_shell`` of ``results/training/oracle``)
these markers make 37 % of answer tokens right but unsure and 14 % rise before 0.9; Fig. 1's gap there is 0, so a
trained model's gap is its own computation of the cups. Graded as ``shell``, on the final ``#### c``.
"""
from __future__ import annotations

from functools import partial

from tspd.tasks import leaning, shell, splits
from tspd.tasks.shell import (BLOCK_LENGTH, GEN_LENGTH, SPLIT_SIZES, extract_answer,  # noqa: F401
                              line_accuracy, prompt, right, template_accuracy)
from tspd.tasks.splits import Splits

SUMMARY = "shell games tracked swap by swap, in answers whose markers lean to a drawn style"  # the book's phrase
P_PLAIN, P_MIXED_FIRST = leaning.P_PLAIN, leaning.P_MIXED_FIRST   # leaning's odds (its oracle's Fig. 1 gap)

make_problem = partial(shell.make_problem, odds=(P_PLAIN, P_MIXED_FIRST))
_SPLITS = Splits("leaning_shell", make_problem, SPLIT_SIZES)
split_of = splits.split_of
load_split = _SPLITS.load          # first n problems of "test" / "traces" (all when n is None); "train" needs n
iter_train = _SPLITS.train         # endless training problems, drawn with repeats
fingerprint = _SPLITS.fingerprint  # hash of the test split: written into a checkpoint's config.json


class LeaningShell(shell.Shell):
    """Graded as ``shell``, on the final ``#### c``."""
    name = "leaning_shell"
    problems = staticmethod(load_split)


__all__ = ["make_problem", "load_split", "iter_train", "fingerprint", "prompt", "right", "line_accuracy",
           "template_accuracy", "LeaningShell", "P_PLAIN", "P_MIXED_FIRST"]
