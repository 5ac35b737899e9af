"""The shell game: each cup follows from the one before it and the swap of its number; graded on the final cup."""
import random

from tspd.tasks import shell
from tspd.tasks.registry import get_task


def test_each_cup_is_one_swap_from_the_one_before_it():
    p = shell.make_problem(random.Random(5))
    cup = p["start"]
    for (a, b), got in zip(p["swaps"], p["cups"]):
        cup = {a: b, b: a}.get(cup, cup)
        assert got == cup
    assert p["final"] == str(p["cups"][-1]) and shell.right(p, p["answer"])


def test_the_answer_is_graded_on_its_final_cup():
    p = {"final": "3"}
    assert shell.right(p, "1:2 2:3\n#### 3") and shell.right(p, "1:4 2:1\n#### 3")   # as GSM8K: the final only
    assert not shell.right(p, "1:2 2:3\n#### 2") and not shell.right(p, "1:2 2:3")


def test_line_accuracy_counts_each_cup_at_its_place():
    p = {"cups": [2, 5, 5]}
    assert shell.line_accuracy([p], ["1:2 2:4 3:5\n#### 5"]) == {"line": [2, 3]}
    assert shell.line_accuracy([p], ["garbage"]) == {"line": [0, 3]}


def test_registered_and_every_game_fits_a_64_token_window():
    from tspd.models.loading import load_model
    task = get_task("shell")
    sample = task.samples(1)[0]
    assert task.grade(sample, task.reference_completion(sample))["correct"]
    tok = load_model("tiny-roster").tokenizer
    longest = max(shell.load_split("test"), key=lambda p: len(p["answer"]))
    assert len(tok(longest["answer"], add_special_tokens=False)["input_ids"]) < 64


def test_the_chains_of_a_game_are_its_cups():
    from tspd.training.serial_probes import chains
    p = shell.make_problem(random.Random(1))
    assert [p["answer"][s:e] for s, e in chains(p)[0]] == [str(c) for c in p["cups"]]


def test_leaning_shell_writes_the_same_cups_in_any_style_and_grades_them():
    from tspd.tasks import leaning_shell
    problems = leaning_shell.load_split("test", 200)
    texts = [p["answer"] for p in problems]
    assert all(leaning_shell.right(p, t) for p, t in zip(problems, texts))
    ok, total = leaning_shell.line_accuracy(problems, texts)["line"]
    assert ok == total == sum(len(p["cups"]) for p in problems)
    seconds = sum(t.count("=") + t.count(";") for t in texts)
    assert seconds > 0   # some runs are mixed
    assert any("=" not in t and ";" not in t and len(p["cups"]) > 3 for p, t in zip(problems, texts))  # some plain
    assert shell.line_accuracy([{"cups": [2, 5]}], ["1=2;2:4\n#### 4"]) == {"line": [1, 2]}


def test_an_always_plain_style_writes_shells_answer():
    p = shell.make_problem(random.Random(3), odds=(1.0, 0.4))   # every run plain: the plain answer exactly
    assert p["answer"] == shell.make_problem(random.Random(3))["answer"]
