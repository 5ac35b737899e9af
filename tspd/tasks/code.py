"""Shared pieces of the code benchmarks: pulling code out of a completion and grading it against tests.

Grading goes through :func:`tspd.sandbox.run_checked`: the completion runs in one sandboxed process,
the data set's tests in another that calls it through a channel of plain values, so a completion cannot
pass by printing, exiting or returning an object that claims to equal anything (``book/sandbox.md``).
"""
from __future__ import annotations

import re
from pathlib import Path

from tspd.sandbox import Limits, run_checked
from tspd.provenance import REPO_ROOT

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


def run_tests(solution: str, tests: str, limits: Limits | None = None, *, prelude: str = "",
              from_program=(), data_root: str | Path | None = None) -> dict:
    """Grade ``solution`` with ``tests`` in the sandbox -> a grade dict (``reason`` None when passed).

    ``prelude`` and ``from_program``: see :func:`tspd.sandbox.run_checked`. The benchmark's ``data_root`` and
    this repository's checkout are hidden from both processes (the data holds the reference solutions).
    ``files_removed`` is in the dict when the program left files outside its directory (it then fails).
    """
    checkout = (REPO_ROOT / "pyproject.toml").is_file()   # installed, the package's parent is site-packages
    hide = ([str(REPO_ROOT)] if checkout else []) + ([str(data_root)] if data_root else [])
    result = run_checked(solution, tests, prelude=prelude, from_program=from_program, limits=limits or Limits(),
                         hide=hide)
    grade = {"correct": result.passed, "reason": None if result.passed else result.reason,
             "seconds": round(result.seconds, 3),
             "stderr": result.stderr[-1000:] if not result.passed else ""}   # the tail names the error
    if result.files_removed:
        grade["files_removed"] = result.files_removed
    return grade
