"""MBPP (Austin et al., 2021), 3-shot, in the original paper's / lm-eval's ``[BEGIN]``/``[DONE]`` format.

Splits by task id (upstream README): test 11-510, validation 511-600, train 601-974, prompt 1-10; the
few-shot examples are tasks 2, 3 and 4. Each example is::

    You are an expert Python programmer, and here is your task: {text} Your code should pass these tests:

    {test 1}
    {test 2}
    {test 3}
    [BEGIN]
    {code}
    [DONE]

joined by blank lines; the query ends after ``[BEGIN]\\n``. Stop: ``[DONE]``. Grading runs
the solution, then ``test_setup_code`` (it builds test inputs from the solution's classes), then the
``test_list`` asserts, in the sandbox (pass@1).
Reference code is stored with CRLF line ends; they are turned into LF everywhere.
"""
from __future__ import annotations

import re

from tspd.sandbox import Limits
from tspd.tasks.base import Task
from tspd.tasks.code import extract_code, run_tests
from tspd.tasks.data import data_file, load_hub, read_data

SPLIT_IDS = {"test": range(11, 511), "validation": range(511, 601), "train": range(601, 975),
             "prompt": range(1, 11)}
FEWSHOT_IDS = (2, 3, 4)
FEWSHOT_DELIMITER = "\n\n"
HUB_CONFIG = "full"


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def _query(row: dict) -> str:
    tests = "\n".join(row["test_list"])
    return (f"You are an expert Python programmer, and here is your task: {row['text']} "
            f"Your code should pass these tests:\n\n{tests}\n[BEGIN]\n")


def clean_completion(completion: str) -> str:
    """The solution code of a completion: fenced code if any, without ``[BEGIN]`` / ``[DONE]`` markers."""
    text = completion.split("[DONE]")[0]
    text = text.strip("\n")
    if text.lstrip().startswith("[BEGIN]"):
        text = text.lstrip()[len("[BEGIN]"):]
    return extract_code(text)


_TOP_LEVEL_DEF = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)", re.M)
_NAME = re.compile(r"[A-Za-z_]\w*")


def tested_names(sample: dict) -> set[str]:
    """Names the reference solution defines at top level and the tests mention: the solution's even where
    they shadow a builtin (task 126 tests a function called ``sum``), which no other name of a builtin may.
    (Read with patterns, not ``ast``: parsing the reference code here would warn about its escapes.)"""
    return set(_TOP_LEVEL_DEF.findall(sample["code"])) & set(_NAME.findall("\n".join(sample["test_list"])))


class MBPP(Task):
    name = "mbpp"
    stop = ("[DONE]",)
    executes_code = True
    splits = tuple(SPLIT_IDS)

    def __init__(self, *args, limits: Limits | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.data_root = None   # the data directory, hidden from the sandbox (set when the data is read)

    def _all_rows(self) -> dict[int, dict]:
        if self.source:   # the hub splits already follow the id ranges; gather them back by id
            rows = [r for split in SPLIT_IDS for r in load_hub(self.source, split, HUB_CONFIG)]
        else:
            path = data_file(self.data_dir, "mbpp/mbpp.jsonl")
            self.data_root = path.parents[1]
            rows = read_data(path)
        return {int(r["task_id"]): r for r in rows}

    def _load(self) -> list[dict]:
        rows = self._all_rows()
        self._fewshot = [rows[i] for i in FEWSHOT_IDS]
        return [{"id": f"mbpp/{i}", "task_id": i, "text": rows[i]["text"], "code": _lf(rows[i]["code"]),
                 "test_list": rows[i]["test_list"], "test_setup_code": _lf(rows[i].get("test_setup_code") or "")}
                for i in SPLIT_IDS[self.split] if i in rows]

    def prompt_text(self, sample: dict) -> str:
        if not hasattr(self, "_fewshot"):
            self.samples()
        shots = [_query(r) + _lf(r["code"]) + "\n[DONE]" for r in self._fewshot]
        return FEWSHOT_DELIMITER.join(shots + [_query(sample)])

    def reference_completion(self, sample: dict) -> str:
        return sample["code"]

    def grade(self, sample: dict, completion: str) -> dict:
        code = clean_completion(completion)
        tests = "\n".join(sample["test_list"]) + "\n"
        # the setup code (tasks 367, 927) builds test inputs from the solution's own classes: it runs after the
        # solution, in the solution's process; the tests get what it built as handles
        solution = f"{code}\n\n{sample['test_setup_code']}\n"
        grade = run_tests(solution, tests, self.limits, from_program=tested_names(sample), data_root=self.data_root)
        return {**grade, "extracted": code}
