"""HumanEval (Chen et al., 2021): 164 problems, 0-shot, pass@1 with the data set's own tests.

The prompt is the function signature and docstring; the completion is the function body. Raw-prompt
generations are cut at the HumanEval harness's stops (a new top-level ``def``/``class``/``if``/``print``
or comment). Chat generations are not cut (they usually restate the whole function in a fenced block);
the grader takes the code out of the fence and, if it defines the entry point at top level, runs it
after the prompt (so the prompt's imports and helpers stay available) instead of appending it.

The tests are the data set's ``check(candidate)``, run as in OpenAI's human-eval but in their own
process (:func:`tspd.tasks.code.run_tests`): ``candidate`` calls the completion across a channel
of plain values, and the prompt, run there too, gives the tests its helpers (``poly``, ``encode_cyclic``).
So a completion that returns an object whose ``__eq__`` always says True fails here, where the reference
harness passes it; the honest completions' grades are the reference harness's (every canonical solution
passes; ``book/sandbox.md``).
"""
from __future__ import annotations

import re

from tspd.sandbox import Limits
from tspd.tasks.base import Task
from tspd.tasks.code import extract_code, run_tests
from tspd.tasks.data import data_file, load_hub, read_data


def build_solution(sample: dict, completion: str) -> tuple[str, str]:
    """(the solution's source: prompt and completion, extracted code) for a completion of ``sample``."""
    code = extract_code(completion)
    entry = sample["entry_point"]
    redefines = re.search(rf"^def {re.escape(entry)}\s*\(", code, re.M) is not None
    return sample["prompt"] + ("\n" + code if redefines else code), code


def build_tests(sample: dict) -> str:
    """The tests' source: the data set's ``check`` and its call on the entry point."""
    return f"{sample['test']}\n\ncheck({sample['entry_point']})\n"


class HumanEval(Task):
    name = "humaneval"
    stop = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#")
    chat_stop = ()
    executes_code = True

    def __init__(self, *args, limits: Limits | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.data_root = None   # the data directory, hidden from the sandbox (set when the data is read)

    def _load(self) -> list[dict]:
        if self.source:
            rows = load_hub(self.source, "test")
        else:
            path = data_file(self.data_dir, "humaneval/HumanEval.jsonl.gz", "humaneval/HumanEval.jsonl")
            self.data_root = path.parents[1]
            rows = read_data(path)
        return [{"id": r["task_id"], **r} for r in rows]

    def prompt_text(self, sample: dict) -> str:
        return sample["prompt"]

    def reference_completion(self, sample: dict) -> str:
        return sample["canonical_solution"]

    def grade(self, sample: dict, completion: str) -> dict:
        """The data set's tests, with the prompt's helpers, against the completion (see the module docstring)."""
        solution, code = build_solution(sample, completion)
        grade = run_tests(solution, build_tests(sample), self.limits, prelude=sample["prompt"],
                          from_program=[sample["entry_point"]], data_root=self.data_root)
        return {**grade, "extracted": code}
