"""Teacher-forced probes (:mod:`tspd.training.probes`) on toy models that fill masks by a rule.

A toy model decodes what it is shown (the question, the answer window with its masked tokens), looks
the problem up by its question and fills the masked characters by a rule: a *reader* copies earlier
results from the lines it sees, a *question-only* model writes the reference solution whatever the
lines say. Both are right on every ordinary probe; only the counterfactual tells them apart.
"""
from __future__ import annotations

import math
import operator

import pytest
import torch

from tspd.tasks import arith
from tspd.models.char_tokenizer import BOS, EOS, MASK, SPECIAL_TOKENS, UNK, build_tokenizer
from tspd.training import probes

GEN = arith.GEN_LENGTH
OPS = {"*": operator.mul, "+": operator.add, "-": operator.sub, "/": operator.floordiv}
HIDDEN = "\x00"   # a masked character in the text a toy sees

ANN = {"question": "Ann buys 4 pens at $7 and 3 cups at $5. She pays $60. Change?",
       "answer": "04*07 = 28\n03*05 = 15\n28+15 = 43\n60-43 = 17\n#### 17", "final": "17"}
# line 1's result (6) is also a number of the question: its copy in line 2 is ambiguous
BEN = {"question": "Ben has 2 bags of 3 nuts and 6 more. He eats 4. How many left?",
       "answer": "02*03 = 06\n06+06 = 12\n12-04 = 08\n#### 8", "final": "8"}


def _write(chars: list[str], start: int, value: str) -> None:
    chars[start:start + len(value)] = value


def _structure(problem: dict, text: str) -> list[str]:
    """``text`` with hidden characters that are not digits of the reference restored (the layout)."""
    return [r if c == HIDDEN and not r.isdigit() else c for c, r in zip(text, problem["answer"])]


def reader(problem: dict, text: str) -> str:
    """Fill left to right from what is written: copied operands from the earlier line's written result,
    results from the written operands, the final from the last line; operands from the question by value."""
    lines = list(arith._LINE.finditer(problem["answer"]))
    out = _structure(problem, text)
    for k, m in enumerate(lines):
        for g in (1, 3):
            if HIDDEN in text[m.start(g):m.end(g)]:
                sources = [j for j in range(k) if lines[j].group(4) == m.group(g)]
                value = int("".join(out[slice(*lines[sources[-1]].span(4))])) if sources else int(m.group(g))
                _write(out, m.start(g), f"{value:02d}")
        if HIDDEN in text[m.start(4):m.end(4)]:
            a, b = int("".join(out[slice(*m.span(1))])), int("".join(out[slice(*m.span(3))]))
            _write(out, m.start(4), f"{OPS[m.group(2)](a, b):02d}")
    final = probes._FINAL.search(problem["answer"])
    if HIDDEN in text[final.start(1):]:
        _write(out, final.start(1), str(int("".join(out[slice(*lines[-1].span(4))]))))
    return "".join(out)


def back_solver(problem: dict, text: str) -> str:
    """Fills a hidden operand from its own line when that line's result and other operand are visible
    (``a = c - b``), otherwise like :func:`reader`: it reads later lines when they are shown."""
    out = list(reader(problem, text))
    first = {"+": lambda c, b: c - b, "*": lambda c, b: c // b, "-": lambda c, b: c + b}    # a from c, b
    second = {"+": lambda c, a: c - a, "*": lambda c, a: c // a, "-": lambda c, a: a - c}   # b from c, a
    for m in arith._LINE.finditer(problem["answer"]):
        hidden = [HIDDEN in text[m.start(g):m.end(g)] for g in (1, 3, 4)]
        if m.group(2) in first and hidden == [True, False, False]:
            _write(out, m.start(1), f"{first[m.group(2)](int(m.group(4)), int(m.group(3))):02d}")
        if m.group(2) in second and hidden == [False, True, False]:
            _write(out, m.start(3), f"{second[m.group(2)](int(m.group(4)), int(m.group(1))):02d}")
    return "".join(out)


def question_only(problem: dict, text: str) -> str:
    """The reference solution, computed from the question whatever the shown lines say."""
    return problem["answer"]


def bad_products(problem: dict, text: str) -> str:
    """Like :func:`question_only`, but every product it fills in is one too many."""
    out = list(problem["answer"])
    for m in arith._LINE.finditer(problem["answer"]):
        if m.group(2) == "*" and HIDDEN in text[m.start(4):m.end(4)]:
            _write(out, m.start(4), f"{(int(m.group(4)) + 1) % 100:02d}")
    return "".join(out)


def scribbler(problem: dict, text: str) -> str:
    """Fills every mask with ``x``: never right."""
    return text.replace(HIDDEN, "x")


class Toy(torch.nn.Module):
    """Logits with all mass on ``rule``'s character at each masked position (the input token elsewhere)."""

    def __init__(self, tokenizer, problems: list[dict], rule, mask_id: int):
        super().__init__()
        self.tok, self.rule, self.mask_id = tokenizer, rule, mask_id
        self.by_question = {p["question"]: p for p in problems}
        self.modes: list[bool] = []

    def forward(self, input_ids, attention_mask=None, position_ids=None, logits_from=0):
        self.modes.append(self.training)
        tok, eos = self.tok, self.tok.eos_token_id
        logits = torch.zeros(*input_ids[:, logits_from:].shape, len(tok))
        for r, row in enumerate(input_ids.tolist()):
            prompt = [t for t, a in zip(row[:logits_from], attention_mask[r].tolist()) if a]
            assert attention_mask[r, logits_from:].all() and position_ids[r, logits_from] == len(prompt)
            assert (position_ids[r, -len(prompt) - GEN:] == torch.arange(len(prompt) + GEN)).all()
            problem = self.by_question[tok.decode(prompt)]
            window = row[logits_from:]
            n = len(tok(problem["answer"], add_special_tokens=False)["input_ids"])   # the answer, then EOS
            text, starts = "", []
            for t in window[:n]:
                starts.append(len(text))
                text += HIDDEN if t == self.mask_id else tok.decode([t])
            filled = self.rule(problem, text)   # a final recomputed from altered lines may be longer: cut
            assert HIDDEN in text and len(filled) >= len(text)
            for j, t in enumerate(window):
                if t == self.mask_id:
                    t = tok(filled[starts[j]], add_special_tokens=False)["input_ids"][0] if j < n else eos
                logits[r, j, t] = 1.0
        return logits


@pytest.fixture(scope="module")
def char_tok():
    return build_tokenizer()


@pytest.fixture(scope="module")
def bpe_tok():
    """Byte-level BPE trained on a few hundred problems: words merge, every digit is its own token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    problems = arith.load_split("train", 300)
    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([p["question"] for p in problems] + [p["answer"] for p in problems],
                            trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=EOS,
                                   mask_token=MASK, unk_token=UNK, clean_up_tokenization_spaces=False)


@pytest.fixture(scope="module")
def problems():
    return arith.load_split("test", 30)


def _run(tok, problems, rule, **kw):
    model = Toy(tok, problems, rule, tok.mask_token_id)
    return probes.run_probes(model, tok, problems, GEN, mask_id=tok.mask_token_id, batch=16, **kw)


def test_roles_of_a_handwritten_problem():
    got = [(ANN["answer"][s.start:s.end], s.role) for s in probes.spans(ANN)]
    assert got == [("04", "operand_question"), ("07", "operand_question"), ("28", "result*"),
                   ("03", "operand_question"), ("05", "operand_question"), ("15", "result*"),
                   ("28", "operand_result"), ("15", "operand_result"), ("43", "result+"),
                   ("60", "operand_question"), ("43", "operand_result"), ("17", "result-"), ("17", "final")]
    assert [s.start for s in probes.spans(ANN)][-2:] == [ANN["answer"].index("17"), ANN["answer"].rindex("17")]
    # both 06 of line 2 are line 1's result and a number of the question: neither role
    got = [(BEN["answer"][s.start:s.end], s.role) for s in probes.spans(BEN)]
    assert got == [("02", "operand_question"), ("03", "operand_question"), ("06", "result*"), ("12", "result+"),
                   ("12", "operand_result"), ("04", "operand_question"), ("08", "result-"), ("8", "final")]


def test_counterfactual_case_alters_line_one_and_masks_its_copy():
    text, span, x, x2 = probes.counterfactual_case(ANN, seed=0)
    assert x == 28 and 10 <= x2 <= 99 and x2 not in {4, 7, 3, 5, 60, 28, 15, 43, 17}
    assert text == ANN["answer"].replace("28", f"{x2:02d}")
    assert (span.start, span.end) == (22, 24) and ANN["answer"][22:24] == "28"
    assert probes.counterfactual_case(ANN, seed=0) == (text, span, x, x2)   # deterministic
    assert len({probes.counterfactual_case(ANN, seed=s)[3] for s in range(10)}) > 1
    assert probes.counterfactual_case(BEN) is None   # x = 6 is also in the question
    twice = {"question": "A press makes 4 caps an hour for 7 hours, then 7 hours. Total?",
             "answer": "04*07 = 28\n04*07 = 28\n28+28 = 56\n#### 56"}
    assert probes.counterfactual_case(twice) is None   # line 2 writes x too: which 28 is copied?


def test_spans_map_to_tokens_with_both_tokenizers(char_tok, bpe_tok, problems):
    for p in problems[:10] + [ANN]:
        ids, offsets = probes._encode(char_tok, p["answer"])
        assert len(ids) == len(p["answer"])
        for s in probes.spans(p):
            assert probes.token_positions(offsets, s.start, s.end) == list(range(s.start, s.end))
    q = problems[0]["question"]
    assert len(bpe_tok(q)["input_ids"]) < len(q) / 2   # words are merged
    for p in problems[:10] + [ANN]:
        ids, offsets = probes._encode(bpe_tok, p["answer"])
        assert len(ids) < len(p["answer"])    # "\n####" and " = " merge, digits do not
        for s in probes.spans(p):
            pos = probes.token_positions(offsets, s.start, s.end)
            assert len(pos) == s.end - s.start
            assert [bpe_tok.decode([ids[i]]) for i in pos] == list(p["answer"][s.start:s.end])


@pytest.mark.parametrize("tok_name", ["char_tok", "bpe_tok"])
def test_a_reader_copies_what_is_written(tok_name, request, problems):
    tok = request.getfixturevalue(tok_name)
    row = _run(tok, problems, reader)
    assert list(row) == list(probes.COLUMNS)
    assert row["cf_n"] > 10 and row["cf_copied"] == 1.0 and row["cf_recomputed"] == 0.0
    assert all(row[c] == 1.0 for c in probes.COLUMNS if c.startswith("probe_") and row[c] is not None)
    assert row["probe_operand_question"] == row["probe_operand_result"] == row["probe_final"] == 1.0


def test_a_question_only_model_never_copies(char_tok, problems):
    row = _run(char_tok, problems, question_only)
    assert row["cf_n"] > 10 and row["cf_copied"] == 0.0 and row["cf_recomputed"] == 1.0
    assert row["probe_operand_result"] == row["probe_result_mul"] == 1.0   # ordinary probes cannot tell


def test_counts_are_per_role_and_model_mode_is_restored(char_tok, problems):
    model = Toy(char_tok, problems, bad_products, char_tok.mask_token_id).train()
    counts = probes.probe_spans(model, char_tok, problems, GEN, mask_id=char_tok.mask_token_id, batch=16)
    assert model.training and model.modes and not any(model.modes)
    n_products = sum(s.role == "result*" for p in problems for s in probes.spans(p))
    assert counts["result*"] == (0, n_products)
    assert all(right == total > 0 for role, (right, total) in counts.items() if role not in ("result*", "result/"))
    assert set(counts) == set(probes.ROLES)
    cf = probes.counterfactual(Toy(char_tok, problems, scribbler, char_tok.mask_token_id), char_tok, problems, GEN,
                               mask_id=char_tok.mask_token_id)
    assert cf["other"] == cf["n"] > 0 and cf["copied"] == cf["recomputed"] == 0


def test_roles_without_instances_are_none_never_nan(char_tok):
    row = _run(char_tok, [BEN], reader)
    assert row["cf_n"] == 0 and row["cf_copied"] is None and row["probe_result_div"] is None
    assert row["probe_final"] == 1.0
    assert not any(isinstance(v, float) and math.isnan(v) for v in row.values())


@pytest.mark.parametrize("tok_name", ["char_tok", "bpe_tok"])
def test_with_the_rest_masked_a_reader_still_reads_and_computes(tok_name, problems, request):
    tok = request.getfixturevalue(tok_name)
    row = _run(tok, problems, reader)
    assert all(row[c] == 1.0 for c in probes.NEXT_COLUMNS.values() if row[c] is not None)
    assert row["cf_next_copied"] == 1.0 and row["cf_next_recomputed"] == 0.0


def test_later_lines_give_a_copied_result_away_unless_they_are_masked(char_tok, problems):
    """A model that solves a hidden operand from its own line's visible result never copies line 1 when
    the rest of the answer is shown; masked after the span, it must read line 1 (and does)."""
    row = _run(char_tok, problems, back_solver)
    assert row["cf_copied"] == 0.0 and row["cf_recomputed"] == 1.0
    assert row["cf_next_copied"] == 1.0


def cautious_reader(problem: dict, text: str) -> str:
    """Reads what is written only where line 1's written result keeps every later line valid; otherwise
    recomputes from the question (as a model that has only seen valid solutions might)."""
    first = next(arith._LINE.finditer(problem["answer"]))
    written = text[first.start(4):first.end(4)]
    follows = HIDDEN in written or arith.keeps_valid(problem, int(written))
    return reader(problem, text) if follows else question_only(problem, text)


def test_the_valid_split_counts_copies_only_where_the_altered_value_keeps_the_solution_valid(char_tok, problems):
    row = _run(char_tok, problems, cautious_reader)
    assert 0 < row["cf_valid_n"] < row["cf_n"]
    assert row["cf_next_copied_valid"] == 1.0 and row["cf_next_copied"] == row["cf_valid_n"] / row["cf_n"]
    assert _run(char_tok, problems, question_only)["cf_next_copied_valid"] == 0.0


def test_masking_after_the_span_reaches_the_end_of_the_window():
    assert probes._masked([3, 4], 8, after=False) == [3, 4]
    assert probes._masked([3, 4], 8, after=True) == [3, 4, 5, 6, 7]


def last_line_reader(problem: dict, text: str) -> str:
    """Like :func:`question_only`, but the final is read from the last line only when that line's result
    is written: a model that cannot answer before its lines are there."""
    out = list(problem["answer"])
    last = list(arith._LINE.finditer(problem["answer"]))[-1]
    if HIDDEN in text[last.start(4):last.end(4)]:
        final = probes._FINAL.search(problem["answer"])
        _write(out, final.start(1), "x" * (final.end(1) - final.start(1)))
    return "".join(out)


def test_one_pass_tells_a_model_that_needs_its_lines(char_tok, problems):
    """(Characters only: a toy reads one hidden character per masked token, which a whole masked window
    of merged subwords breaks.)"""
    tok = char_tok
    args = dict(mask_id=tok.mask_token_id, batch=16)
    assert probes.one_pass(Toy(tok, problems, question_only, tok.mask_token_id), tok, problems, GEN, **args) \
        == (len(problems), len(problems))
    assert probes.one_pass(Toy(tok, problems, last_line_reader, tok.mask_token_id), tok, problems, GEN, **args) \
        == (0, len(problems))
    row = _run(tok, problems, last_line_reader)
    assert row["one_pass_final"] == 0.0 and row["probe_final"] == row["next_final"] == 1.0
