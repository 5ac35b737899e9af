"""The long word-problem task of the regime model (tspd.tasks.chain)."""
from __future__ import annotations

import random
import re

import pytest

from tspd.tasks.registry import get_task
from tspd.tasks import chain
from tspd.tasks.generated import generated_task

LINE = re.compile(r"^([A-Za-z][^=]*?)(\d\d)([-+*/])(\d\d) = (\d\d)$")


@pytest.fixture(scope="module")
def train_sample():
    it = chain.iter_train(0)
    return [next(it) for _ in range(2000)]


def _check(problem: dict) -> list[tuple[str, int, str, int, int]]:
    """Every line ``label aa op bb = cc`` computes right in 0..99; the final line repeats the last result."""
    *lines, final = problem["answer"].split("\n")
    parsed = []
    for line in lines:
        m = LINE.match(line)
        assert m, line
        label, a, op, b, c = m.group(1), int(m.group(2)), m.group(3), int(m.group(4)), int(m.group(5))
        assert c == {"+": a + b, "-": a - b, "*": a * b, "/": a // max(b, 1)}[op] and 0 <= c <= 99, line
        assert op != "/" or a % b == 0
        parsed.append((label, a, op, b, c))
    assert final == f"#### {parsed[-1][4]}" and problem["final"] == str(parsed[-1][4])
    return parsed


def test_every_solution_computes_right_and_ends_with_its_last_result(train_sample):
    for p in train_sample:
        _check(p)


def test_solutions_have_five_to_ten_steps_and_every_template(train_sample):
    counts = [p["answer"].count("\n") for p in train_sample]
    assert min(counts) >= chain.MIN_LINES and max(counts) <= chain.MAX_LINES
    assert sum(c >= 8 for c in counts) > len(counts) // 5             # long solutions are common, not rare
    assert {p["template"] for p in train_sample} == set(chain.TEMPLATES)


def test_the_solutions_vary_as_text_does(train_sample):
    """The freedom: independent steps in any order, operands of + and * in either order, several phrasings,
    two solution paths; each variant occurs often."""
    shopping = [p for p in train_sample if p["template"] == "shopping"]
    first_named = [p["answer"].split("\n")[0].lower() for p in shopping]
    first_goods = [re.search(r"buys \d+ (\w+)", p["question"]).group(1) for p in shopping]
    in_order = sum(g in line for g, line in zip(first_goods, first_named))
    assert 0.1 < in_order / len(shopping) < 0.6                  # the first product written is any of 3-5
    buys = [(p, int(a), int(b)) for p in shopping for a, b in re.findall(r"(\d+) \w+ at \$(\d+)", p["question"]) if a != b]
    as_asked = sum(f"{a:02d}*{b:02d} =" in p["answer"] for p, a, b in buys)
    swapped = sum(f"{b:02d}*{a:02d} =" in p["answer"] for p, a, b in buys)
    assert as_asked > len(buys) // 4 and swapped > len(buys) // 4
    products = [line for p in train_sample for line in p["answer"].split("\n") if "*" in line]
    labels = {LINE.match(line).group(1) for line in products}
    assert len(labels) > 20
    garden = [p for p in train_sample if p["template"] == "garden"]
    assert 0.3 < sum("left:" in p["answer"] or "Alive" in p["answer"].split("\n")[1] for p in garden) / len(garden) < 0.9


def test_shopping_sums_follow_the_written_order():
    rng = random.Random(3)
    for _ in range(200):
        try:
            q, lines, final = chain._shopping(rng)
        except chain._Redraw:
            continue
        products = [int(re.search(r"= (\d\d)$", line).group(1)) for line in lines if "*" in line]
        sums = [line for line in lines if "+" in line]
        first = re.search(r"(\d\d)\+(\d\d)", sums[0]).groups()
        assert sorted(map(int, first)) == sorted(products[:2])


def test_splits_are_fixed_disjoint_and_sized():
    test, traces = chain.load_split("test"), chain.load_split("traces")
    assert len(test) == 500 and len(traces) == 2000
    assert {p["question"] for p in test}.isdisjoint(p["question"] for p in traces)
    assert all(chain.split_of(p["question"]) == "test" for p in test)
    assert chain.load_split("test", 3) == test[:3]
    it = chain.iter_train(5)
    assert all(chain.split_of(next(it)["question"]) == "train" for _ in range(500))
    assert chain.fingerprint() == chain.fingerprint() and len(chain.fingerprint()) == 12


def test_grading_accepts_any_solution_with_the_right_final():
    task = get_task("chain")
    sample = task.samples(1)[0]
    other = "Some other way: 01+01 = 02\n#### " + sample["final"]
    assert task.grade(sample, other)["correct"]
    assert not task.grade(sample, "#### 100")["correct"]
    assert task.grade(sample, "no answer")["reason"].startswith("no '####")


def test_answers_fit_the_window_with_a_subword_tokenizer(tmp_path):
    from tspd.models.subword_tokenizer import train_tokenizer
    from tspd.training.lm.data import task_texts

    tok = train_tokenizer(task_texts(2000, task=chain), tmp_path)
    lengths = [len(tok(p["answer"], add_special_tokens=False)["input_ids"]) for p in chain.load_split("test", 200)]
    assert max(lengths) < chain.GEN_LENGTH - 32 and sum(lengths) / len(lengths) > 80


def test_generated_task_by_name_or_module_path():
    assert generated_task("chain") is chain and generated_task("tspd.tasks.chain") is chain
    with pytest.raises(ValueError, match="unknown generated task"):
        generated_task("nope")


def test_an_altered_solution_keeps_its_labels_and_follows_its_first_line():
    """arith's alteration rewrites numbers in place, so a chain solution keeps its phrasing."""
    done = 0
    for i, p in enumerate(chain.load_split("traces", 300)):
        a = chain.altered(p, random.Random(i))
        if a is None:
            continue
        done += 1
        first, rest = a["answer"].split("\n", 1)
        ref_first = p["answer"].split("\n", 1)[0]
        assert first[:-2] == ref_first[:-2] and first[-2:] != ref_first[-2:]    # line 1's result only is changed
        parsed, ref = _check({**a, "answer": rest}), _check({**p, "answer": p["answer"].split("\n", 1)[1]})
        assert [line[0] for line in parsed] == [line[0] for line in ref]          # every later line computes right, same labels
        assert a["answer"][:a["clean_chars"]] == a["answer"].split("\n")[0]
    assert done > 100
