"""Teacher-forced probes: what a masked-diffusion LM has learned on :mod:`tspd.tasks.arith`.

A *teacher-forced probe* puts the reference solution in the answer window, exactly as training does
(answer, then EOS up to ``gen_length``, the question left-padded before it), replaces ONE span of it
by the mask token, runs one forward pass and takes the argmax at the masked positions. The span is
right iff every masked token's argmax is the reference token. The spans, by role, come from parsing
each solution line ``a op b = c`` and the final ``#### N``:

- ``operand_question``: an operand whose value is a number of the question and no earlier line's result;
- ``operand_result``: an operand equal to an earlier line's result and not a number of the question
  (an operand that is both, or neither, is skipped);
- ``result*``, ``result+``, ``result-``, ``result/``: the result ``c`` of a line, its operands visible;
- ``final``: the ``N`` of ``#### N``.

Why a *one-pass* probe (``one_pass_final``): the whole answer window masked, one forward, is the final
``N`` argmax right at its reference place? A model that answers this way has nothing left for parallel
decoding to lose: committing many tokens per step (Sec. 1) only costs accuracy when the answer needs the
lines written before it (``results/training/t13-fixed-stream`` records such a model).

Why a *counterfactual*: a model that recomputes every number from the question in one pass gets the
ordinary probes partly right (an operand copied from line 1 is also line 1's product of two question
numbers) without ever reading the lines it is shown. So line 1's written result ``x`` is replaced by
another two-digit value ``x'`` (the rest of the reference kept) and the later operand that copies ``x``
is masked: a model that reads what is written predicts ``x'`` (``copied``), one that recomputes
predicts ``x`` (``recomputed``).

Motivation: an early ``tiny-arith`` (character tokenizer, LLaDA's uniform masking) copied question operands
well but hardly ever copied what it was shown in place of line 1's result: it did not read its own lines
(the measured probes: ``../shared/notes/embedded_model_facts.md``, 2026-11-24; :mod:`tspd.training.masking`).

Tokens are mapped to characters with the tokenizer's offsets (``return_offsets_mapping``): a span masks
exactly the tokens that overlap its characters, so the probes work with the character tokenizer and
with a subword tokenizer whose digits are single tokens. Everything here is a pure function of the
model's forward ``model(ids, attention_mask=, position_ids=, logits_from=P)`` (logits of rows ``P..``).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

import torch

from tspd.tasks import arith

ROLES = ("operand_question", "operand_result", "result*", "result+", "result-", "result/", "final")
# run_probes' keys, a fixed order for CSV columns: the fraction right per role (None where the problems
# have no instance of the role), the counterfactual's fractions copied / recomputed of cf_n cases
# (None where cf_n is 0), and cf_n itself.
ROLE_COLUMNS = {"operand_question": "probe_operand_question", "operand_result": "probe_operand_result",
                "result*": "probe_result_mul", "result+": "probe_result_add", "result-": "probe_result_sub",
                "result/": "probe_result_div", "final": "probe_final"}
# The same with everything after the span masked too (``after=True``): ``next_*`` and ``cf_next_*``.
NEXT_COLUMNS = {role: "next_" + col.removeprefix("probe_") for role, col in ROLE_COLUMNS.items()}
COLUMNS = (*ROLE_COLUMNS.values(), "cf_copied", "cf_recomputed", "cf_n",
           *NEXT_COLUMNS.values(), "cf_next_copied", "cf_next_recomputed", "one_pass_final",
           "cf_copied_valid", "cf_next_copied_valid", "cf_valid_n")   # (appended later: older logs lack them)

_FINAL = re.compile(r"####\s*(\d+)")
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class Span:
    """Characters ``[start, end)`` of the answer text probed under ``role``."""
    role: str
    start: int
    end: int


def question_numbers(question: str) -> set[int]:
    """Values of the numbers written in the question (``$60`` -> 60)."""
    return {int(n) for n in _NUMBER.findall(question)}


def spans(problem: dict) -> list[Span]:
    """Every probed span of the reference solution, in text order (ambiguous operands left out)."""
    answer, asked = problem["answer"], question_numbers(arith.prompt(problem))
    out, earlier = [], set()
    for m in arith._LINE.finditer(answer):
        for g in (1, 3):
            v = int(m.group(g))
            if v in asked and v not in earlier:
                out.append(Span("operand_question", m.start(g), m.end(g)))
            elif v in earlier and v not in asked:
                out.append(Span("operand_result", m.start(g), m.end(g)))
        out.append(Span("result" + m.group(2), m.start(4), m.end(4)))
        earlier.add(int(m.group(4)))
    final = _FINAL.search(answer)
    if final:
        out.append(Span("final", final.start(1), final.end(1)))
    return out


def token_positions(offsets: list[tuple[int, int]], start: int, end: int) -> list[int]:
    """Indices of the tokens whose character offsets overlap ``[start, end)``."""
    return [i for i, (s, e) in enumerate(offsets) if s < end and e > start]


def _masked(pos: list[int], gen_length: int, after: bool) -> list[int]:
    """The window positions to mask: the span's, and with ``after`` every position after it as well."""
    return pos + list(range(pos[-1] + 1, gen_length)) if after else pos


def _encode(tokenizer, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]


def _window(tokenizer, ids: list[int], gen_length: int) -> list[int]:
    """The answer window as training builds it (``tspd.training.lm.data.encode_answer``): ids, then EOS fill."""
    if len(ids) >= gen_length:
        raise ValueError(f"answer of {len(ids)} tokens does not fit gen_length={gen_length} with an EOS after it")
    return ids + [tokenizer.eos_token_id] * (gen_length - len(ids))


# An instance: (prompt ids, answer window ids, positions to mask, how many of them are the span's: those
# are the ones read back).
Item = tuple[list[int], list[int], list[int], int]


@torch.no_grad()
def _predict(model, tokenizer, items: list[Item], gen_length: int, mask_id: int, batch: int) -> list[list[int]]:
    """Argmax at each item's masked positions: left-padded batches, one forward each, model in eval mode."""
    try:
        device = next(model.parameters()).device
    except StopIteration:
        device = torch.device("cpu")
    was_training = model.training
    model.eval()
    out: list[list[int]] = [[] for _ in items]
    order = sorted(range(len(items)), key=lambda i: len(items[i][0]))   # similar prompt widths together
    try:
        for c in range(0, len(order), batch):
            chunk = order[c:c + batch]
            width = max(len(items[i][0]) for i in chunk)
            ids = torch.full((len(chunk), width + gen_length), tokenizer.pad_token_id, dtype=torch.long)
            att = torch.zeros_like(ids)
            for r, i in enumerate(chunk):
                prompt, window, pos, _ = items[i]
                ids[r, width - len(prompt):width] = torch.tensor(prompt, dtype=torch.long)
                ids[r, width:] = torch.tensor(window, dtype=torch.long)
                ids[r, width + torch.tensor(pos, dtype=torch.long)] = mask_id
                att[r, width - len(prompt):] = 1
            pos_ids = (att.cumsum(-1) - 1).clamp_min(0)
            logits = model(ids.to(device), attention_mask=att.to(device), position_ids=pos_ids.to(device),
                           logits_from=width)
            pred = logits.argmax(-1).cpu()
            for r, i in enumerate(chunk):
                out[i] = pred[r, items[i][2]].tolist()[:items[i][3]]
    finally:
        model.train(was_training)
    return out


def probe_spans(model, tokenizer, problems: list[dict], gen_length: int, *, mask_id: int,
                batch: int = 128, after: bool = False) -> dict[str, tuple[int, int]]:
    """``{role: (right, total)}`` over every span of :func:`spans`, for every role of :data:`ROLES`.

    With ``after`` everything after the span is masked too: the state of a decoder that has written the
    answer up to the span. Without it, later lines can give the span away (a result is copied by the next
    line, an operand follows from its line's result), so only ``after`` shows whether the model can
    *compute* a result from its operands.
    """
    items, roles, targets = [], [], []
    for p in problems:
        ids, offsets = _encode(tokenizer, p["answer"])
        prompt, window = _encode(tokenizer, arith.prompt(p))[0], _window(tokenizer, ids, gen_length)
        for s in spans(p):
            pos = token_positions(offsets, s.start, s.end)
            items.append((prompt, window, _masked(pos, gen_length, after), len(pos)))
            roles.append(s.role)
            targets.append([window[i] for i in pos])
    counts = {role: [0, 0] for role in ROLES}
    for role, target, pred in zip(roles, targets, _predict(model, tokenizer, items, gen_length, mask_id, batch)):
        counts[role][0] += int(pred == target)
        counts[role][1] += 1
    return {role: (right, total) for role, (right, total) in counts.items()}


def fractions(counts: dict[str, tuple[int, int]]) -> dict[str, float | None]:
    """``{role: right / total}``; None for a role with no instance."""
    return {role: (right / total if total else None) for role, (right, total) in counts.items()}


def counterfactual_case(problem: dict, seed: int = 0) -> tuple[str, Span, int, int] | None:
    """``(altered answer, masked operand, x, x')`` for a problem whose line 1 result ``x`` is copied later.

    The case is kept only when unambiguous: ``x`` is no number of the question and, line 1's result and
    the copying operand aside, no number of the solution; ``x'`` (10..99, drawn from an RNG seeded by
    ``seed`` and the question) is neither ``x`` nor any number of the question or the solution. In the
    altered answer line 1's result and the copying operand are both written ``x'`` (the operand is masked).
    """
    answer, question = problem["answer"], arith.prompt(problem)
    lines = list(arith._LINE.finditer(answer))
    if len(lines) < 2 or len(lines[0].group(4)) != 2:
        return None
    x = int(lines[0].group(4))
    uses = [(m, g) for m in lines[1:] for g in (1, 3) if int(m.group(g)) == x]
    if not uses or x in question_numbers(question):
        return None
    m, g = uses[0]
    numbers = [(n.start(), int(n.group())) for n in _NUMBER.finditer(answer)]
    if sum(v == x for _, v in numbers) != 2:   # line 1's result and the operand, nothing else
        return None
    taken = question_numbers(question) | {v for _, v in numbers}
    rng = random.Random(f"probes-counterfactual-{seed}-{question}")
    x2 = rng.choice([v for v in range(10, 100) if v not in taken])
    a, b = lines[0].start(4), lines[0].end(4)
    s, e = m.start(g), m.end(g)
    text = f"{answer[:a]}{x2:02d}{answer[b:s]}{x2:02d}{answer[e:]}"
    return text, Span("operand_result", s, e), x, x2


def counterfactual(model, tokenizer, problems: list[dict], gen_length: int, *, mask_id: int, seed: int = 0,
                   batch: int = 128, after: bool = False) -> dict[str, int]:
    """``{"copied", "recomputed", "other", "n", "copied_valid", "n_valid"}`` over the problems with a
    :func:`counterfactual_case`; ``*_valid`` counts only the cases whose ``x'`` keeps every later line a
    valid one (:func:`tspd.tasks.arith.keeps_valid`), the others ask the model to copy a value into
    a line that cannot be completed (``x' - 40`` with ``x' < 40``, an inexact quotient).

    With ``after`` everything after the masked operand is masked too, so the later lines cannot tell the
    true value: what remains is the question (recompute) and the altered line (copy), as when decoding.
    """
    items, copied, recomputed, valid = [], [], [], []
    for p in problems:
        case = counterfactual_case(p, seed)
        if case is None:
            continue
        text, span, _, x2 = case
        ids, offsets = _encode(tokenizer, text)
        ref_ids, ref_offsets = _encode(tokenizer, p["answer"])
        pos = token_positions(offsets, span.start, span.end)
        if pos != token_positions(ref_offsets, span.start, span.end):
            continue   # x and x' tokenized differently: not comparable (never with single-digit tokens)
        items.append((_encode(tokenizer, arith.prompt(p))[0], _window(tokenizer, ids, gen_length),
                      _masked(pos, gen_length, after), len(pos)))
        copied.append([ids[i] for i in pos])
        recomputed.append([ref_ids[i] for i in pos])
        valid.append(arith.keeps_valid(p, x2))
    out = {"copied": 0, "recomputed": 0, "other": 0, "n": len(items), "copied_valid": 0, "n_valid": sum(valid)}
    for pred, c, r, ok in zip(_predict(model, tokenizer, items, gen_length, mask_id, batch), copied, recomputed,
                              valid):
        out["copied" if pred == c else "recomputed" if pred == r else "other"] += 1
        out["copied_valid"] += ok and pred == c
    return out


def one_pass(model, tokenizer, problems: list[dict], gen_length: int, *, mask_id: int,
             batch: int = 128) -> tuple[int, int]:
    """``(right, n)``: the final ``N`` read from one forward with the whole answer window masked.

    Right means every token of the reference's ``N`` is the argmax at its place: the model has solved
    the problem from the question alone, without any line of its own written.
    """
    items, targets = [], []
    for p in problems:
        final = _FINAL.search(p["answer"])
        if not final:
            continue
        ids, offsets = _encode(tokenizer, p["answer"])
        window = _window(tokenizer, ids, gen_length)
        pos = token_positions(offsets, final.start(1), final.end(1))
        rest = [i for i in range(gen_length) if i not in pos]
        items.append((_encode(tokenizer, arith.prompt(p))[0], window, pos + rest, len(pos)))
        targets.append([window[i] for i in pos])
    preds = _predict(model, tokenizer, items, gen_length, mask_id, batch)
    return sum(pred == t for pred, t in zip(preds, targets)), len(items)


def run_probes(model, tokenizer, problems: list[dict], gen_length: int, *, mask_id: int, seed: int = 0,
               batch: int = 128) -> dict[str, float | int | None]:
    """Both probes, with the rest of the answer visible and with everything after the span masked, and the
    one-pass final (:func:`one_pass`), as one flat dict with the keys of :data:`COLUMNS`, in that order.

    Fractions lie in [0, 1]; a fraction with no instance is None (an empty CSV cell), never NaN;
    ``cf_n`` is the number of counterfactual cases (an int).
    """
    row = {}
    for after, names, cf_prefix in ((False, ROLE_COLUMNS, "cf_"), (True, NEXT_COLUMNS, "cf_next_")):
        roles = fractions(probe_spans(model, tokenizer, problems, gen_length, mask_id=mask_id, batch=batch,
                                      after=after))
        cf = counterfactual(model, tokenizer, problems, gen_length, mask_id=mask_id, seed=seed, batch=batch,
                            after=after)
        n = cf["n"]
        row.update({names[role]: value for role, value in roles.items()})
        row.update({cf_prefix + "copied": cf["copied"] / n if n else None,
                    cf_prefix + "recomputed": cf["recomputed"] / n if n else None,
                    cf_prefix + "copied_valid": cf["copied_valid"] / cf["n_valid"] if cf["n_valid"] else None})
        row["cf_n"], row["cf_valid_n"] = n, cf["n_valid"]
    right, n = one_pass(model, tokenizer, problems, gen_length, mask_id=mask_id, batch=batch)
    row["one_pass_final"] = right / n if n else None
    return {k: row[k] for k in COLUMNS}


def task_row(model, tokenizer, problems: list[dict], gen_length: int, items: dict[str, list], task, mask_id: int,
             batch: int, checks: dict | None = None) -> dict[str, float | None]:
    """The share right of each probe of ``items`` (key -> [(item, gold tokens)]; ``checks``: a key's own test of
    a prediction against its gold, else equality) and ``one_pass_lines``: the whole window masked, one forward, the
    share of ``task.line_accuracy`` of the argmax text (None where a probe has no instance)."""
    row = {}
    for key, pairs in items.items():
        preds = _predict(model, tokenizer, [i for i, _ in pairs], gen_length, mask_id, batch)
        check = (checks or {}).get(key, lambda pred, gold: pred == gold)
        row[key] = sum(check(pred, gold) for pred, (_, gold) in zip(preds, pairs)) / len(pairs) if pairs else None
    whole = [(_encode(tokenizer, task.prompt(p))[0], [mask_id] * gen_length, list(range(gen_length)), gen_length)
             for p in problems]
    texts = [tokenizer.decode([t for t in pred if t != tokenizer.eos_token_id])
             for pred in _predict(model, tokenizer, whole, gen_length, mask_id, batch)]
    ok, total = task.line_accuracy(problems, texts)["line"]
    row["one_pass_lines"] = ok / total if total else None
    return row


@dataclass(frozen=True)
class TaskProbes:
    """A probe module (roster's day lines, the serial tasks' hops) bound to one task: what ``train-lm``'s
    evaluation calls."""
    module: object   # tspd.training.roster_probes or serial_probes
    task: object     # the generated task module the probes read

    @property
    def COLUMNS(self) -> tuple[str, ...]:
        return self.module.COLUMNS

    def run_probes(self, model, tokenizer, problems: list[dict], gen_length: int, **kwargs) -> dict[str, float | None]:
        return self.module.run_probes(model, tokenizer, problems, gen_length, task=self.task, **kwargs)


__all__ = ["TaskProbes", "task_row", "ROLES", "COLUMNS", "Span", "spans", "question_numbers", "token_positions", "probe_spans",
           "fractions", "counterfactual_case", "counterfactual", "one_pass", "run_probes"]
