"""Does a checkpoint compute its results from what is written around them? (issue 32's diagnostics)

Every result ``cc`` of a line ``aa op bb = cc`` in the first ``--n`` test answers is masked, everything else
(question, the other lines, the EOS fill) stays clean, and the model's argmax is read in one forward. A model
that has learned nothing about numbers guesses the same frequent value everywhere; one that reads its
operands gets products and differences; one that reads the next line copies the value written there.
:mod:`tspd.training.probes` instead masks everything after the span (the decoder's state).

    python scripts/experiments/digit_probe.py RUN_DIR [--task chain] [--window 160] [--n 64] [--lines K] [--bare]

``--lines K`` keeps each answer's first K lines (a short-window model on a long task); ``--bare`` drops the
labels in front of the equations (``Pens: 04*07 = 28`` -> ``04*07 = 28``), as ``arith`` writes its lines.
"""
from __future__ import annotations

import argparse
import re
from collections import defaultdict

import torch

from tspd.tasks.generated import generated_task
from tspd.models.loading import load_model
from tspd.training.lm.data import make_batch

_EQUATION = re.compile(r"(\d\d)([*+/-])(\d\d) = (\d\d)")
_LABEL = re.compile(r"^[^\n]*?(?=\d\d[*+/-]\d\d = \d\d$)", re.M)


def shown(answer: str, lines: int | None = None, bare: bool = False) -> str:
    """``answer`` as the probe shows it: its first ``lines`` lines, without the labels when ``bare``."""
    if lines:
        answer = "\n".join(answer.split("\n")[:lines])
    return _LABEL.sub("", answer) if bare else answer


def result_spans(tokenizer, answer: str) -> list[tuple[str, str, list[int]]]:
    """``(operator, equation, token positions of its result)`` for each line of ``answer``."""
    offsets = tokenizer(answer, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    spans = []
    for m in _EQUATION.finditer(answer):
        s, e = m.span(4)
        spans.append((m.group(2), m.group(0), [k for k, (a, z) in enumerate(offsets) if a >= s and z <= e]))
    return spans


def results_masked(run: str, task_name: str, window: int, n: int, lines: int | None = None, bare: bool = False):
    """``(net, tokenizer, batch, noisy, probed)``: the first ``n`` test problems batched at ``window`` with every
    result masked in ``noisy``; ``probed`` lists ``(row, operator, equation, result columns)``."""
    loaded = load_model(run)
    net, tok = loaded.module.float().eval(), loaded.tokenizer
    problems = [dict(p, answer=shown(p["answer"], lines, bare)) for p in generated_task(task_name).load_split("test")[:n]]
    batch = make_batch(tok, problems, window, 32)
    noisy = batch.input_ids.clone()
    probed = []
    for i, p in enumerate(problems):
        for op, eq, pos in result_spans(tok, p["answer"]):
            cols = [batch.prompt_width + k for k in pos]
            noisy[i, cols] = tok.mask_token_id
            probed.append((i, op, eq, cols))
    return net, tok, batch, noisy, probed


def probe(run: str, task_name: str, window: int, n: int, lines: int | None = None,
          bare: bool = False) -> dict[str, tuple[int, int, list]]:
    """Per operator: results right, results probed, a few ``(equation, predicted)`` examples."""
    net, tok, batch, noisy, probed = results_masked(run, task_name, window, n, lines, bare)
    with torch.no_grad():
        pred = net(noisy, attention_mask=batch.attention_mask, position_ids=batch.position_ids).argmax(-1)
    out = defaultdict(lambda: [0, 0, []])
    for i, op, eq, cols in probed:
        row = out[op]
        row[0] += bool((pred[i, cols] == batch.input_ids[i, cols]).all())
        row[1] += 1
        if len(row[2]) < 4:
            row[2].append((eq, tok.decode(pred[i, cols])))
    return dict(out)


def problem_arguments(description: str, n: int) -> argparse.Namespace:
    """The command line of a script that probes :func:`results_masked`'s problems (``n``: its default count)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("run")
    ap.add_argument("--task", default="chain")
    ap.add_argument("--window", type=int, default=160)
    ap.add_argument("--n", type=int, default=n)
    ap.add_argument("--lines", type=int, default=None, help="keep each answer's first K lines")
    ap.add_argument("--bare", action="store_true", help="drop the labels in front of the equations")
    return ap.parse_args()


def main() -> None:
    a = problem_arguments(__doc__.splitlines()[0], n=64)
    for op, (right, total, examples) in sorted(probe(a.run, a.task, a.window, a.n, a.lines, a.bare).items()):
        print(f"{op}  {right:4d} / {total:<4d} {100 * right / total:5.1f} %   e.g. {examples}")


if __name__ == "__main__":
    main()
