"""Teacher-forced probes of :mod:`tspd.tasks.trail`: how many look-ups does the model chain in one forward?

As in :mod:`tspd.training.probes`, the reference answer sits in the window (EOS fill after it), a trail's letters
from a place drawn per line onward are masked with everything after them, one forward runs, and the argmax is
read ``h`` letters into the masked run: right only if the model chained ``h`` look-ups of the question's links
from the last letter written. ``probe_hop1`` is the look-up a decoder writing one letter a step needs;
``probe_hop2`` and ``probe_hop4`` are what 2 and 4 tokens a step ask of it where a trail's letters are all that is
left of a block (the slope of issue 83). ``one_pass_lines``: the whole window masked, one forward: the share of
trail lines right in the argmax text (near 0 when answers cannot come in one pass).
"""
from __future__ import annotations

import random

import torch

from tspd.tasks import trail
from tspd.training.probes import _encode, _predict, _window, token_positions

HOPS = (1, 2, 4)
NAMES = {f"probe_hop{h}": f"{h} look-up{'s' * (h > 1)} ahead" for h in HOPS} | \
        {"one_pass_lines": "trail lines in one forward"}
COLUMNS = tuple(k for k in NAMES if k != "one_pass_lines")   # new columns of the log (roster's has one_pass_lines)


def letters(problem: dict) -> list[list[tuple[int, int]]]:
    """Per trail line of the reference answer, the character span of each letter."""
    out, start = [], 0
    for text in problem["lines"]:
        out.append([(start + i, start + i + 1) for i, c in enumerate(text) if c.isalpha()])
        start += len(text) + 1
    return out


def _items(tokenizer, problems: list[dict], gen_length: int, seed: int) -> dict[str, list]:
    """``{probe: [(item, gold), ...]}``: per trail with enough steps, the run masked from a drawn letter on."""
    out = {f"probe_hop{h}": [] for h in HOPS}
    for p in problems:
        rng = random.Random(f"{seed}-{p['question']}")
        ids, offsets = _encode(tokenizer, p["answer"])
        prompt, window = _encode(tokenizer, trail.prompt(p))[0], _window(tokenizer, ids, gen_length)
        for line in letters(p):
            places = [token_positions(offsets, *span)[0] for span in line]
            first = rng.randrange(1, len(places))   # the first masked letter (the start letter stays written)
            masked = list(range(places[first], gen_length))
            for h in HOPS:
                if first + h - 1 < len(places):
                    read = places[first + h - 1]
                    order = [read] + [i for i in masked if i != read]
                    out[f"probe_hop{h}"].append(((prompt, window, order, 1), [window[read]]))
    return out


@torch.no_grad()
def run_probes(model, tokenizer, problems: list[dict], gen_length: int, *, mask_id: int, seed: int = 0,
               batch: int = 128) -> dict[str, float | None]:
    """The probes of this module as one flat dict with the keys of :data:`NAMES` (None: no instance)."""
    row = {}
    for key, items in _items(tokenizer, problems, gen_length, seed).items():
        preds = _predict(model, tokenizer, [i for i, _ in items], gen_length, mask_id, batch)
        row[key] = sum(pred == gold for pred, (_, gold) in zip(preds, items)) / len(items) if items else None
    whole = [(_encode(tokenizer, trail.prompt(p))[0], [mask_id] * gen_length, list(range(gen_length)), gen_length)
             for p in problems]
    texts = [tokenizer.decode([t for t in pred if t != tokenizer.eos_token_id])
             for pred in _predict(model, tokenizer, whole, gen_length, mask_id, batch)]
    ok, total = trail.line_accuracy(problems, texts)["line"]
    row["one_pass_lines"] = ok / total if total else None
    return {k: row[k] for k in NAMES}


__all__ = ["HOPS", "NAMES", "COLUMNS", "letters", "run_probes"]
