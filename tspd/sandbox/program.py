"""Run a whole Python program in the sandbox and report how it ended.

This is the runner for a program that checks itself (solution and tests in one file, a random sentinel
printed after the tests): its pass rule, exit 0 and the sentinel printed, holds for programs that
cooperate, and the walls hold for any program. A hostile program can print the sentinel itself (it is in
its own source, frames and code objects), so the graders do not use this rule: they run the tests in
another process (:func:`tspd.sandbox.run_checked`).
"""
from __future__ import annotations

import os
import secrets
import time

from tspd.sandbox.limits import Limits
from tspd.sandbox.outcome import SandboxResult, classify
from tspd.sandbox.process import Child
from tspd.sandbox.uid import claim_uid, interpreter, release_uid
from tspd.sandbox.workdir import make_top, make_work, read_capped, remove_tree


def run_python(program: str, limits: Limits = Limits(), *, require_sentinel: bool = True, hide=()) -> SandboxResult:
    """Run ``program`` (Python source: solution and tests) in a sandbox and classify the outcome.

    With ``require_sentinel`` a line printing a random token is appended to the program; the run passes
    only if it exits 0 and that token was printed (the tests ran to the end), and left no file outside its
    directory. ``hide``: directories the program must not see (:mod:`.isolate`).
    """
    nonce = "TSPD-SANDBOX-DONE-" + secrets.token_hex(8)
    source = program.rstrip() + "\n"
    if require_sentinel:
        source += f"\n\nprint({nonce!r}, flush=True)\n"
    uid = claim_uid() if (limits.isolate_uid and os.geteuid() == 0 and interpreter(True)) else None
    top = None
    try:
        top = make_top(uid is not None)
        child = Child("program", make_work(top, "work", uid, {"program.py": source}), uid, limits, hide)
        with open(top / "stdout", "w+b") as out, open(top / "stderr", "w+b") as err:
            t0 = time.monotonic()
            deadline = t0 + limits.wall_seconds
            try:
                child.start(out, err)
                child.go(deadline)
                timed_out = not child.wait(deadline)
            finally:
                returncode = child.end()
            seconds = time.monotonic() - t0
            stdout, stdout_tail = read_capped(out, limits.output_bytes)
            stderr, stderr_tail = read_capped(err, limits.output_bytes)
        removed = child.files_removed()
        sentinel_seen = nonce in stdout_tail
        if require_sentinel:
            stdout = stdout.replace(nonce + "\n", "").replace(nonce, "")
        reason = classify(returncode, timed_out, stderr_tail, sentinel_seen if require_sentinel else True)
        if reason == "passed" and removed:
            reason = f"failed: wrote {removed} files outside its directory"
        return SandboxResult(reason == "passed", reason, returncode, stdout, stderr, seconds, uid, removed,
                             child.isolation())
    finally:
        if top is not None:
            remove_tree(top)
        release_uid(uid)
