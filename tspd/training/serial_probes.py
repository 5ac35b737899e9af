"""Teacher-forced probes of the serial tasks (:mod:`tspd.tasks.trail`, :mod:`tspd.tasks.shell`): how many steps
does the model chain in one forward?

A serial task's answer holds chains (:func:`chains`: a trail's letters after its start, a game's cups), each token
one step from the one before it. As in :mod:`tspd.training.probes`, the reference answer sits in the window (EOS fill
after it), a chain's tokens from a place drawn per chain onward are masked with everything after them, one forward
runs, and the argmax is read ``h`` tokens into the masked run: right only if the model chained ``h`` steps from the
last token written. ``probe_hop1`` is the step a decoder writing one token a step needs; ``probe_hop2`` and
``probe_hop4`` are what 2 and 4 tokens a step ask of it where a chain is all that is left of a block (the slope of
issue 83). ``one_pass_lines``: the whole window masked, one forward: the task's ``line_accuracy`` of the argmax text
(near 0 when answers cannot come in one pass).
"""
from __future__ import annotations

import random

import torch

from types import ModuleType

from tspd.tasks import leaning_shell, shell, trail
from tspd.training.probes import _encode, _window, task_row, token_positions

HOPS = (1, 2, 4)
NAMES = {f"probe_hop{h}": f"{h} step{'s' * (h > 1)} ahead" for h in HOPS} | \
        {"one_pass_lines": "lines (trail) or cups (shell) right in one forward"}
COLUMNS = tuple(k for k in NAMES if k != "one_pass_lines")   # new columns of the log (roster's has one_pass_lines)


def chains(problem: dict) -> list[list[tuple[int, int]]]:
    """The character spans of each chain's computed tokens in the reference answer: per trail line its letters after
    the start letter (the start is copied, not computed), or the game's cups."""
    out, start = [], 0
    if "cups" in problem:   # shell: "1:2 2:5 ...", a cup after each joiner (':' or leaning_shell's '=')
        text = problem["answer"].partition("\n")[0]
        return [[(i + 1, i + 2) for i, c in enumerate(text) if c in shell.FORMS["join"]]]
    for text in problem["lines"]:
        out.append([(start + i, start + i + 1) for i, c in enumerate(text) if c.isalpha()][1:])
        start += len(text) + 1
    return out


def _items(tokenizer, problems: list[dict], gen_length: int, seed: int, task: ModuleType) -> dict[str, list]:
    """``{probe: [(item, gold), ...]}``: per chain, the run masked from a drawn token on."""
    out = {f"probe_hop{h}": [] for h in HOPS}
    for p in problems:
        rng = random.Random(f"{seed}-{p['question']}")
        ids, offsets = _encode(tokenizer, p["answer"])
        prompt, window = _encode(tokenizer, task.prompt(p))[0], _window(tokenizer, ids, gen_length)
        for chain in chains(p):
            places = [token_positions(offsets, *span)[0] for span in chain]
            first = rng.randrange(len(places))   # the first masked token
            masked = list(range(places[first], gen_length))
            for h in HOPS:
                if first + h - 1 < len(places):
                    read = places[first + h - 1]
                    order = [read] + [i for i in masked if i != read]
                    out[f"probe_hop{h}"].append(((prompt, window, order, 1), [window[read]]))
    return out


@torch.no_grad()
def run_probes(model, tokenizer, problems: list[dict], gen_length: int, *, mask_id: int, seed: int = 0,
               batch: int = 128, task: ModuleType = trail) -> dict[str, float | None]:
    """The probes of this module as one flat dict with the keys of :data:`NAMES` (None: no instance)."""
    row = task_row(model, tokenizer, problems, gen_length, _items(tokenizer, problems, gen_length, seed, task), task,
                   mask_id, batch)
    return {k: row[k] for k in NAMES}


SERIAL = (trail, shell, leaning_shell)   # the tasks these probes read


__all__ = ["HOPS", "NAMES", "COLUMNS", "SERIAL", "chains", "run_probes"]
