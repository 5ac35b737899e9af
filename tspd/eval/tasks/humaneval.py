"""HumanEval (Chen et al., 2021): 164 problems, 0-shot, pass@1 with the data set's own tests.

The prompt is the function signature and docstring; the completion is the function body. Raw-prompt
generations are cut at the HumanEval harness's stops (a new top-level ``def``/``class``/``if``/``print``
or comment). Chat generations are not cut (they usually restate the whole function in a fenced block);
the grader takes the code out of the fence and, if it defines the entry point at top level, runs it
after the prompt (so the prompt's imports and helpers stay available) instead of appending it.

Parity with the reference harness, kept on purpose: the data set's ``check(candidate)`` runs as
written, as in OpenAI's human-eval, so a completion that returns an object whose ``__eq__`` always says
True passes its ``assert candidate(...) == expected`` lines. A guard would make pass@1 here a different
quantity from the one the paper and the reference harness report; such a completion is visible in its
row's ``extracted`` code.
"""
from __future__ import annotations

import re

from tspd.eval.sandbox import Limits
from tspd.tasks.base import Task
from tspd.eval.tasks.code import extract_code, run_tests
from tspd.eval.tasks.data import data_file, load_hub, read_data


def build_program(sample: dict, completion: str) -> tuple[str, str]:
    """(program to run, extracted solution code) for a completion of ``sample``."""
    code = extract_code(completion)
    entry = sample["entry_point"]
    redefines = re.search(rf"^def {re.escape(entry)}\s*\(", code, re.M) is not None
    solution = sample["prompt"] + ("\n" + code if redefines else code)
    program = f"{solution}\n\n{sample['test']}\n\ncheck({entry})\n"
    return program, code


class HumanEval(Task):
    name = "humaneval"
    stop = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#")
    chat_stop = ()
    executes_code = True

    def __init__(self, *args, limits: Limits | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.limits = limits

    def _load(self) -> list[dict]:
        if self.source:
            rows = load_hub(self.source, "test")
        else:
            rows = read_data(data_file(self.data_dir, "humaneval/HumanEval.jsonl.gz", "humaneval/HumanEval.jsonl"))
        return [{"id": r["task_id"], **r} for r in rows]

    def prompt_text(self, sample: dict) -> str:
        return sample["prompt"]

    def reference_completion(self, sample: dict) -> str:
        return sample["canonical_solution"]

    def grade(self, sample: dict, completion: str) -> dict:
        """The data set's tests run against the completion in the sandbox, exactly as the reference harness
        runs them (so a return value whose ``__eq__`` always says True passes there and here)."""
        program, code = build_program(sample, completion)
        return {**run_tests(program, self.limits), "extracted": code}
