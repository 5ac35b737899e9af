"""The outcome of a sandboxed run and its one-phrase reason, read off an exit status, a traceback or the
verdict of the tests (:mod:`.check`).

Why one vocabulary: the rows of an evaluation count failures by kind (:func:`tspd.eval.results.reason_kind`),
so a program killed for memory reads ``memory`` whether it died while loading or inside a call.
"""
from __future__ import annotations

import re
import signal
from dataclasses import dataclass


@dataclass
class SandboxResult:
    """Outcome of one run. ``reason`` is "passed", "failed: <Exception>: <message>", "timeout",
    "timeout (cpu limit)", "memory", "output or file size limit", "killed by signal N (NAME)",
    "exit code N", "failed: exited before the tests finished" or "failed: wrote N files outside its
    directory". ``files_removed``: files the program left outside its directory (in the private mounts or,
    without them, found by uid), all removed. ``isolation``: the layers that held (uid, net, ipc, mount, readonly,
    allowlist, pid, guard)."""
    passed: bool
    reason: str
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    uid: int | None = None   # the unprivileged uid of the program, None when not isolated
    files_removed: int = 0
    isolation: tuple[str, ...] = ()


def classify(returncode: int | None, timed_out: bool, stderr: str, sentinel_seen: bool) -> str:
    """The one-phrase reason for a run's outcome (see :class:`SandboxResult`)."""
    if timed_out:
        return "timeout"
    if returncode is not None and returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU:
            return "timeout (cpu limit)"
        if sig == signal.SIGXFSZ:
            return "output or file size limit"
        return f"killed by signal {sig} ({_signal_name(sig)})"
    if returncode == 0:
        return "passed" if sentinel_seen else "failed: exited before the tests finished"
    error = last_exception(stderr)
    if error is not None:
        if error.split(":", 1)[0] == "SystemExit":
            return f"exit code {returncode}"
        return exception_reason(error)
    return f"exit code {returncode}"


def exception_reason(error: str) -> str:
    """The reason for an uncaught ``"Name: message"``: ``memory`` and the file size limit have their own."""
    if error.split(":", 1)[0] == "MemoryError":
        return "memory"
    if "[Errno 27]" in error:   # EFBIG: Python ignores SIGXFSZ, so RLIMIT_FSIZE shows up as OSError
        return "output or file size limit"
    return "failed: " + error


_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration)\w*)(:.*)?$")
_MESSAGE_CHARS = 200   # keep reasons one short line


def last_exception(stderr: str) -> str | None:
    """``"Name: message"`` of the last uncaught exception in a Python traceback on ``stderr``, or None."""
    lines = stderr.splitlines()
    for line in reversed(lines):
        m = _EXC_LINE.match(line.strip())
        if m:
            name = m.group(1).rsplit(".", 1)[-1]
            message = (m.group(2) or "").lstrip(":").strip()
            return f"{name}: {message[:_MESSAGE_CHARS]}" if message else name
    return None


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "unknown"
