"""PID 1 of a sandbox's PID namespace, and the process outside it that relays how the run ended.

Why a PID namespace: the program then sees its own processes only (``/proc`` is the namespace's, mounted by
PID 1 while it builds the root, :mod:`.root`): no other process's command line, no process to signal
outside it. And when PID 1 dies, the kernel kills every process in the namespace, so nothing the program
started survives the run, whatever uid it runs under.

Three processes (the first two run only this package's code)::

    boot (outside: made the namespaces, relays the exit)  ->  PID 1 (builds the root, reaps)  ->  the role

:class:`Link` joins the first two: PID 1 reports the walls' status, waits for the go (and dies with its
parent, ``PR_SET_PDEATHSIG``), starts the role in a session of its own, gives up its capabilities
(``harmless``), reaps the orphans the program leaves, and when the role's process ends, reports its wait
status and exits, which ends the namespace. The outer process then ends the same way (the same exit code,
or the same signal), so the grader reads the role's exit as before. The program cannot signal PID 1: under
a sandbox uid PID 1 keeps another uid, and under the evaluator's uid the kernel ignores signals sent to a
namespace's init from inside it that it has no handler for.

Stdlib only, Python 3.8 syntax: this file is loaded by the sandboxed interpreter (:mod:`.boot`).
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import signal

PR_SET_PDEATHSIG = 1
_LINE = 1 << 16


class Link:
    """Fork PID 1 (the caller must have made the PID namespace: ``unshare(CLONE_NEWPID)``). ``outer`` tells the
    two processes apart."""

    def __init__(self):
        up_r, up_w = os.pipe()          # PID 1 -> outer: the status line, then the role's wait status
        down_r, down_w = os.pipe()      # outer -> PID 1: the go byte (end of file: the outer died)
        self.pid = os.fork()
        self.outer = self.pid != 0
        if self.outer:
            os.close(up_w)
            os.close(down_r)
            self._read, self._write = up_r, down_w
        else:
            os.close(up_r)
            os.close(down_w)
            self._read, self._write = down_r, up_w
            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    # ---- PID 1 -------------------------------------------------------------------------------------------------
    def report(self, status: dict) -> None:
        os.write(self._write, (json.dumps(status) + "\n").encode())

    def wait_go(self) -> None:
        """Block until the outer's go; exit if it died first (its death also kills us: ``PR_SET_PDEATHSIG``)."""
        if os.read(self._read, 1) != b"g":
            os._exit(70)
        os.close(self._read)

    def reap(self, role_fds, harmless) -> None:
        """Start the role's process and return in it (a session of its own; no end of the link). PID 1 stays
        here: it closes the role's descriptors, calls ``harmless`` (gives up its privileges), reaps every
        child until the role's process ends, reports its wait status and exits."""
        role = os.fork()
        if role == 0:
            os.close(self._write)
            os.setsid()
            return
        for fd in role_fds:
            os.close(fd)
        harmless()
        signal.signal(signal.SIGINT, signal.SIG_DFL)   # as init, ignored unless handled
        while True:
            pid, wait_status = os.waitpid(-1, 0)
            if pid == role:
                os.write(self._write, b"%d\n" % wait_status)
                os._exit(0)

    # ---- outside ----------------------------------------------------------------------------------------------
    def receive(self) -> dict:
        """PID 1's status report ({} when it died first)."""
        line = self._line()
        try:
            return json.loads(line) if line.endswith(b"\n") else {}
        except ValueError:
            return {}

    def go_and_relay(self, role_fds) -> None:
        """Let PID 1 go, wait for it, and end as the role's process ended. Never returns."""
        try:
            os.write(self._write, b"g")
        except OSError:
            pass
        for fd in [self._write, *role_fds]:
            os.close(fd)
        _, own = os.waitpid(self.pid, 0)
        try:
            wait_status = int(self._line())
        except ValueError:
            wait_status = own   # PID 1 itself was killed (the grader's end, or a limit)
        _end_like(wait_status)

    def _line(self) -> bytes:
        data = b""
        while not data.endswith(b"\n") and len(data) < _LINE:
            chunk = os.read(self._read, _LINE)
            if not chunk:
                break
            data += chunk
        return data


def _end_like(wait_status: int) -> None:
    """Exit with the code of ``wait_status``, or die of its signal (no core file)."""
    if os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass   # SIGKILL, SIGSTOP: already their default
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else 1)
