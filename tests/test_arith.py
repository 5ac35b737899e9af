"""The synthetic GSM8K-style task (tspd.tasks.arith) and the character tokenizer (tspd.models.char_tokenizer)."""
from __future__ import annotations

import random
import re

import pytest

from tspd.tasks import arith
from tspd.models.char_tokenizer import BOS, EOS, MASK, UNK, build_tokenizer

GEN_LENGTH, BLOCK = arith.GEN_LENGTH, arith.BLOCK_LENGTH
STEP = re.compile(r"(\d+)([-+*/])(\d+) = (\d+)")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer
    out = tmp_path_factory.mktemp("chartok")
    build_tokenizer(out)
    return AutoTokenizer.from_pretrained(str(out))


@pytest.fixture(scope="module")
def train_sample():
    it = arith.iter_train(0)
    return [next(it) for _ in range(3000)]


# ---- generator --------------------------------------------------------------------------------
def test_make_problem_is_deterministic():
    a = [arith.make_problem(random.Random(7)) for _ in range(3)]
    b = [arith.make_problem(random.Random(7)) for _ in range(3)]
    assert a == b
    r1, r2 = random.Random(1), random.Random(1)
    assert [arith.make_problem(r1) for _ in range(20)] == [arith.make_problem(r2) for _ in range(20)]


def test_train_stream_keeps_a_template_whose_questions_run_out(monkeypatch):
    few = [q for q in (f"Tiny {n}?" for n in range(40)) if arith.split_of(q) == "train"][:3]

    def tiny(rng):                                   # three distinct questions in all
        q = rng.choice(few)
        return q, [arith._eq(2, "*", 3)[0]], 6

    monkeypatch.setattr(arith, "MIN_ANSWER_CHARS", 0)
    monkeypatch.setattr(arith, "TEMPLATES", {"tiny": tiny, "rates": arith._rates})
    it = arith.iter_train(0)
    late = [next(it)["template"] for _ in range(2000)][1000:]
    assert 0.3 < late.count("tiny") / len(late) < 0.7     # still half of the mix, not run dry after 3


def test_streams_are_deterministic_and_seeded():
    first = [next(iter(arith.iter_train(0)))["question"]]
    it0, it0b, it1 = arith.iter_train(0), arith.iter_train(0), arith.iter_train(1)
    a = [next(it0) for _ in range(50)]
    assert a == [next(it0b) for _ in range(50)]
    assert a[0]["question"] == first[0]
    assert [p["question"] for p in a] != [next(it1)["question"] for _ in range(50)]
    assert arith.load_split("test", 20) == arith.load_split("test")[:20]


def test_split_sizes_and_ids():
    test, traces = arith.load_split("test"), arith.load_split("traces")
    assert len(test) == arith.SPLIT_SIZES["test"] == 500
    assert len(traces) == arith.SPLIT_SIZES["traces"]
    assert test[7]["id"] == "arith-test-0007"
    assert {"id", "question", "answer", "final"} <= set(test[0])
    assert len({p["question"] for p in test}) == len(test)
    with pytest.raises(ValueError):
        arith.load_split("train")
    with pytest.raises(ValueError):
        arith.load_split("validation", 3)
    assert len(arith.load_split("train", 5)) == 5


def test_splits_are_disjoint(train_sample):
    test = {p["question"] for p in arith.load_split("test")}
    traces = {p["question"] for p in arith.load_split("traces")}
    train = {p["question"] for p in train_sample}
    assert not test & traces
    assert not train & (test | traces)
    assert all(arith.split_of(q) == "test" for q in test)
    assert all(arith.split_of(q) == "traces" for q in traces)
    assert all(arith.split_of(q) == "train" for q in train)


def test_every_template_appears(train_sample):
    assert {p["template"] for p in train_sample} == set(arith.TEMPLATES)


def test_worked_solutions_are_correct(train_sample):
    ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
           "/": lambda a, b: a / b}
    for p in train_sample + arith.load_split("test"):
        lines = p["answer"].split("\n")
        assert lines[-1] == f"#### {p['final']}"
        steps = [STEP.search(line) for line in lines[:-1]]
        assert 3 <= len(steps) <= 4 and all(steps), p["answer"]
        results = []
        for m in steps:
            a, op, b, c = int(m[1]), m[2], int(m[3]), int(m[4])
            assert ops[op](a, b) == c, m[0]          # exact, non-negative integer results
            assert 0 <= c <= 99 and a <= 99 and b <= 99, m[0]
            if op in "*/":                           # products and quotients stay in the 1-digit table
                assert (a <= 9 and b <= 9) if op == "*" else (b <= 9 and c <= 9), m[0]
            results.append(c)
        assert str(results[-1]) == p["final"]
        assert all(int(n) <= 99 for n in re.findall(r"\d+", p["question"]))   # every number is small


def test_intermediate_results_are_reused(train_sample):
    reused = 0
    for p in train_sample:
        steps = [STEP.search(line) for line in p["answer"].split("\n")[:-1]]
        earlier = {m[4] for m in steps[:-1]}
        reused += any(m[1] in earlier or m[3] in earlier for m in steps[1:])
    assert reused == len(train_sample)


def test_lengths_fit_generation_window(tokenizer, train_sample):
    for p in train_sample + arith.load_split("test") + arith.load_split("traces"):
        assert 40 <= len(p["question"]) <= arith.MAX_QUESTION_CHARS
        ids = tokenizer(p["answer"], add_special_tokens=False)["input_ids"]
        assert len(ids) == len(p["answer"])                  # one token per character
        assert BLOCK < len(ids) <= arith.MAX_ANSWER_CHARS <= GEN_LENGTH - 4   # both blocks, >= 4 EOS after it


def test_extract_answer():
    assert arith.extract_answer("3*5 = 15.\n#### 27") == "27"
    assert arith.extract_answer("#### 1 then\n#### 42<|endoftext|><|endoftext|>") == "42"
    assert arith.extract_answer("#### 1,234 apples") == "1234"
    assert arith.extract_answer("####-3") == "-3"
    assert arith.extract_answer("#### 5.0") == "5"
    assert arith.extract_answer("no final line 27") is None
    assert arith.extract_answer("#### ") is None
    assert arith.extract_answer("") is None
    for p in arith.load_split("test", 50):
        assert arith.extract_answer(p["answer"]) == p["final"]


def test_fingerprint_is_stable():
    fp = arith.fingerprint()
    assert fp == arith.fingerprint() and len(fp) == 12


def test_prompt_is_the_question():
    p = arith.load_split("test", 1)[0]
    assert arith.prompt(p) == p["question"] == arith.prompt(p["question"])


# ---- tokenizer --------------------------------------------------------------------------------
def test_tokenizer_round_trip(tokenizer, train_sample):
    texts = [p["question"] + "\n" + p["answer"] for p in train_sample[:300]]
    texts += ["  two  spaces , odd . spacing \n\n#### 7 ", "~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./"]
    for text in texts:
        ids = tokenizer(text)["input_ids"]
        assert len(ids) == len(text)
        assert tokenizer.decode(ids) == text
        assert ids == tokenizer(text, add_special_tokens=False)["input_ids"]   # no BOS/EOS added


def test_special_tokens(tokenizer, tmp_path):
    import json
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in (BOS, EOS, MASK, UNK)}
    assert len(set(ids.values())) == 4
    assert tokenizer.bos_token_id == ids[BOS]
    assert tokenizer.eos_token_id == tokenizer.pad_token_id == ids[EOS]
    assert tokenizer.mask_token_id == ids[MASK]
    assert tokenizer.unk_token_id == ids[UNK]
    assert tokenizer("é")["input_ids"] == [ids[UNK]]
    assert tokenizer.decode([tokenizer.convert_tokens_to_ids("a"), ids[EOS], ids[MASK]],
                            skip_special_tokens=True) == "a"
    assert tokenizer.padding_side == "left"
    assert not getattr(tokenizer, "chat_template", None)
    build_tokenizer(tmp_path)
    cfg = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert cfg["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert (cfg["bos_token"], cfg["eos_token"], cfg["pad_token"], cfg["mask_token"], cfg["unk_token"]) == \
        (BOS, EOS, EOS, MASK, UNK)
    assert "chat_template" not in cfg


def test_tokenizer_is_deterministic(tmp_path):
    build_tokenizer(tmp_path / "a")
    build_tokenizer(tmp_path / "b")
    assert (tmp_path / "a" / "tokenizer.json").read_text() == (tmp_path / "b" / "tokenizer.json").read_text()


def test_template_accuracy_counts_each_template_apart():
    a, b = arith.load_split("test", 2)
    b = {**b, "template": a["template"] + "x"}
    got = arith.template_accuracy([a, b, a], [a["answer"], "#### -1", "nothing"])
    assert got == dict(sorted({a["template"]: [1, 2], b["template"]: [0, 1]}.items()))


def test_line_accuracy_counts_reference_lines_right_at_their_index():
    p = {"answer": "4*7 = 28\n3*5 = 15\n28+15 = 43\n60-43 = 17\n#### 17"}
    perfect = arith.line_accuracy([p], [p["answer"]])
    assert perfect == {"*": [2, 2], "+": [1, 1], "-": [1, 1], "/": [0, 0]}
    wrong_sum = arith.line_accuracy([p], ["4*7 = 28\n3*5 = 15\n28+15 = 44\n60-44 = 16\n#### 16"])
    assert wrong_sum == {"*": [2, 2], "+": [0, 1], "-": [0, 1], "/": [0, 0]}
    shifted = arith.line_accuracy([p], ["3*5 = 15\n4*7 = 28"])         # right lines, wrong places
    assert shifted["*"] == [0, 2] and arith.line_accuracy([p], [None])["+"] == [0, 1]


def test_an_altered_solution_follows_its_altered_first_line():
    import random
    rng = random.Random(0)
    problems = arith.load_split("test", 100)
    done = [(p, arith.altered(p, rng)) for p in problems]
    assert sum(a is not None for _, a in done) >= 80
    for p, a in done:
        if a is None:
            continue
        lines = [arith._LINE.fullmatch(line).groups() for line in a["answer"].split("\n")[:-1]]
        ref = [arith._LINE.fullmatch(line).groups() for line in p["answer"].split("\n")[:-1]]
        assert lines[0][:3] == ref[0][:3] and lines[0][3] != ref[0][3]      # same operands, another result
        assert a["answer"][:a["clean_chars"]] == p["answer"].split("\n")[0][:-2] + lines[0][3]
        ops = {"+": int.__add__, "-": int.__sub__, "*": int.__mul__, "/": int.__floordiv__}
        for k, (x, op, y, z) in enumerate(lines[1:], 1):
            assert ops[op](int(x), int(y)) == int(z) and 0 <= int(z) <= 99          # every later line holds
            for g, v in ((0, x), (2, y)):
                if any(int(ref[k][g]) == int(r[3]) for r in ref[:k]):             # a copy of an earlier result
                    j = max(i for i, r in enumerate(ref[:k]) if int(r[3]) == int(ref[k][g]))
                    assert int(v) == int(lines[j][3])                               # carries the altered value
        assert arith.extract_answer(a["answer"]) == a["final"] == str(int(lines[-1][3]))


def test_a_partial_alteration_copies_any_value_and_is_learned_only_up_to_the_line_it_breaks():
    import random
    rng = random.Random(0)
    problems = arith.load_split("test", 100)
    done = [(p, arith.altered(p, rng, partial=True)) for p in problems]
    partial = [(p, a) for p, a in done if a is not None and "scored_chars" in a]
    assert len(partial) >= 20 and any(a is not None and "scored_chars" not in a for _, a in done)
    for p, a in partial:
        learned = a["answer"][:a["scored_chars"]]
        assert learned.endswith(" = ") and a["final"] is None and a["clean_chars"] < a["scored_chars"]
        new = [arith._LINE.fullmatch(line).groups() for line in learned.split("\n")[:-1]]
        ref = [arith._LINE.fullmatch(line).groups() for line in p["answer"].split("\n")[:-1]]
        assert 10 <= int(new[0][3]) <= 99 and new[0][3] != ref[0][3]         # any two-digit value
        a_, op, b_ = re.fullmatch(r"(\d+)([-+*/])(\d+) = ", learned.split("\n")[-1]).groups()
        va, vb = int(a_), int(b_)                                             # the broken line's operands
        assert (op == "-" and va < vb) or (op == "/" and va % vb) or {"+": va + vb, "*": va * vb}.get(op, 0) > 99
        assert len(a["answer"].split("\n")) == len(p["answer"].split("\n"))   # the rest keeps the window's shape


def test_reordered_swaps_only_commutative_operands_and_keeps_the_answer():
    problems = arith.load_split("test", 40)
    rng = random.Random(0)
    swapped = 0
    for p in problems:
        r = arith.reordered(p, rng)
        assert r["final"] == p["final"] and arith.extract_answer(r["answer"]) == p["final"]
        assert len(r["answer"]) == len(p["answer"])
        for old, new in zip(arith._LINE.finditer(p["answer"]), arith._LINE.finditer(r["answer"])):
            a, op, b, c = old.groups()
            assert new.groups() in {(a, op, b, c)} | ({(b, op, a, c)} if op in "+*" else set())
            swapped += new.groups() != old.groups()
    assert swapped > 10


def test_an_operand_equal_to_a_question_number_and_an_earlier_result_is_not_altered():
    import random
    p = {"question": "A has 2 bags of 3 nuts and 6 more. Total?", "answer": "02*03 = 06\n06+06 = 12\n#### 12"}
    assert arith.altered(p, random.Random(0)) is None
