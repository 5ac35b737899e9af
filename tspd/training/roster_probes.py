"""Teacher-forced probes of :mod:`tspd.tasks.roster` (and of its styled variant, :mod:`tspd.tasks.styled`: any
task with roster's day lines, a ``LINE`` pattern): has the model learned that a line's chores agree?

As in :mod:`tspd.training.probes`, the reference plan sits in the answer window (EOS fill after it, the
question left-padded before it), a few of its tokens are replaced by the mask token, one forward runs and the
argmax is read at the masked places. For every day line of every problem (a cell drawn per line, seeded):

- ``probe_chore``: one chore masked, the rest of the line visible. It is fixed by the other chores (the one
  not yet given), so a model that reads them gets it right; one that does not is at chance, 1/n. This is the
  dependency between answer tokens that parallel decoding can break (the coupled-answers issue).
- ``probe_pair``: two chores of the line masked: right when the two argmaxes are the two missing chores, in
  either order. Both places see the same two candidates; a model that commits them in one step from their own
  marginals gives one chore twice about half the time, which is what a fixed 2 tokens per step risks.
- ``probe_day``: the day number of the line masked: the line before it plus one (the layout fixes it).
- ``one_pass_lines``: the whole window masked, one forward: the share of day lines right in the argmax text.
  Near 0 when the answer cannot come in one pass, as it cannot for LLaDA-8B on GSM8K.
"""
from __future__ import annotations

import random
import re
from types import ModuleType

import torch

from tspd.tasks import roster
from tspd.training.probes import _encode, _window, task_row, token_positions

COLUMNS = ("probe_chore", "probe_pair", "probe_day", "one_pass_lines")
_CHORE = re.compile(r"[^\W\d]+")   # a chore's word (not a styled roster's hours)


def cells(problem: dict, task: ModuleType = roster) -> list[tuple[tuple[int, int], list[tuple[int, int]]]]:
    """Per day line of the reference answer, the character spans of its day number and of each chore."""
    out, start = [], 0
    for text in problem["answer"].split("\n"):
        m = task.LINE.match(text)
        if m:
            chores = [(start + m.start(2) + c.start(), start + m.start(2) + c.end())
                      for c in _CHORE.finditer(m.group(2)) if c.group() != "and"]
            out.append(((start + m.start(1), start + m.end(1)), chores))
        start += len(text) + 1
    return out


def _items(tokenizer, problems: list[dict], gen_length: int, seed: int, task: ModuleType):
    """``{probe: [(item, gold), ...]}``: the masked places of every probe over every day line."""
    out = {"probe_chore": [], "probe_pair": [], "probe_day": []}
    for p in problems:
        rng = random.Random(f"{seed}-{p['question']}")
        ids, offsets = _encode(tokenizer, p["answer"])
        prompt, window = _encode(tokenizer, task.prompt(p))[0], _window(tokenizer, ids, gen_length)
        for day, chores in cells(p, task):
            places = [token_positions(offsets, *chore) for chore in chores]
            one = rng.randrange(len(places))
            two = sorted(rng.sample(range(len(places)), 2))
            for key, pos in (("probe_chore", places[one]), ("probe_day", token_positions(offsets, *day)),
                             ("probe_pair", places[two[0]] + places[two[1]])):
                out[key].append(((prompt, window, pos, len(pos)), [window[i] for i in pos]))
    return out


def _pair_right(pred: list[int], gold: list[int]) -> bool:
    """Two masked chores (a token each, or equal halves) right in either order."""
    half = len(gold) // 2
    return pred == gold or pred == gold[half:] + gold[:half]


@torch.no_grad()
def run_probes(model, tokenizer, problems: list[dict], gen_length: int, *, mask_id: int, seed: int = 0,
               batch: int = 128, task: ModuleType = roster) -> dict[str, float | None]:
    """The probes of this module as one flat dict with the keys of :data:`COLUMNS` (None: no instance)."""
    row = task_row(model, tokenizer, problems, gen_length, _items(tokenizer, problems, gen_length, seed, task), task,
                   mask_id, batch, {"probe_pair": _pair_right})
    return {k: row[k] for k in COLUMNS}


__all__ = ["COLUMNS", "cells", "run_probes"]
