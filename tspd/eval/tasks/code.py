"""Shared pieces of the code benchmarks: pulling code out of a completion and running it with tests."""
from __future__ import annotations

import re

from tspd.eval.sandbox import Limits, run_python

_FENCED = re.compile(r"^```[ \t]*([\w+.-]*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
_OPEN_FENCE = re.compile(r"\s*```[ \t]*[\w+.-]*[^\n]*\n(.*)", re.S)
_PYTHON_TAGS = ("", "python", "python3", "py")


def extract_code(completion: str) -> str:
    """The code in a completion.

    * fenced blocks: the first one tagged python (or untagged), else the first block;
    * an opening fence that never closes (generation ran out): everything after it;
    * code followed by a closing fence only (the prompt opened it): everything before it;
    * otherwise the completion itself.
    """
    blocks = _FENCED.findall(completion)
    if blocks:
        for tag, body in blocks:
            if tag.lower() in _PYTHON_TAGS:
                return body
        return blocks[0][1]
    m = _OPEN_FENCE.match(completion)
    if m:
        return m.group(1)
    if "```" in completion:
        return completion[:completion.index("```")]
    return completion


def run_tests(program: str, limits: Limits | None = None) -> dict:
    """Run ``program`` (solution + tests) in the sandbox -> a grade dict (``reason`` None when passed)."""
    result = run_python(program, limits or Limits())
    return {"correct": result.passed, "reason": None if result.passed else result.reason,
            "seconds": round(result.seconds, 3),
            "stderr": result.stderr[-1000:] if not result.passed else ""}   # the tail names the error
