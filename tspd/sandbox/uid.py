"""Fresh unprivileged uids for sandboxed interpreters (when the evaluator is root), finding and killing
every process of one, and the Python that such a uid can start.

Why a uid per run: Linux ignores ``RLIMIT_NPROC`` for root, a process of another uid cannot write root's
files, signal the evaluator or read another process's memory, and ``kill(-1)`` sent from the uid reaches
every process it started, even those that left the process group. A graded run uses two: one for the
program and one for its tests (:mod:`.checked`), so neither can touch the other.
"""
from __future__ import annotations

import os
import random
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

# Unprivileged uids for sandboxed children when the evaluator is root: a block below 65534 (nobody) and
# above the usual system and login ranges, inside the id map of typical user namespaces (0-65535).
UID_RANGE = (40_000, 60_000)

_KILL_POLL_SECONDS = 0.01   # between kill sweeps while killed processes are still exiting (where no pidfd wakes us)
_EXIT_WAIT_SECONDS = 0.05   # the longest wait for dying processes to exit before the next sweep
PF_EXITING = 0x4            # /proc/<pid>/stat's flags: the process is in exit (include/linux/sched.h)
SIGKILL_PENDING = 1 << (signal.SIGKILL - 1)   # its bit in /proc/<pid>/status's SigPnd and ShdPnd masks
_PROBE_SECONDS = 30         # a cold interpreter start on a loaded machine

_uid_lock = threading.Lock()
_uids_in_use: set[int] = set()
_interpreters: dict[bool, str | None] = {}


class SandboxError(RuntimeError):
    """The sandbox itself could not be set up (not a failure of the program under test)."""


def _proc_status(pid_dir: Path) -> dict[str, str]:
    fields = {}
    try:
        for line in (pid_dir / "status").read_text().splitlines():
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    except OSError:
        pass
    return fields


def _owners():
    """(pid, owner) of every process, zombies included: the owner of ``/proc/<pid>``, i.e. its effective uid."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                yield int(name), os.stat(f"/proc/{name}").st_uid
            except OSError:
                continue


def pids_of_uid(uid: int, include_zombies: bool = False) -> list[int]:
    """Pids owned by ``uid`` (owner of /proc/<pid>, i.e. the effective uid), zombies optional."""
    return [pid for pid, owner in _owners() if owner == uid and
            (include_zombies or not _proc_status(Path("/proc", str(pid))).get("State", "Z").startswith("Z"))]


def count_tasks(uid: int) -> int:
    """Tasks (threads) whose real uid is ``uid``: what RLIMIT_NPROC counts."""
    total = 0
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _proc_status(d)
            if st.get("Uid", "").split()[:1] == [str(uid)]:
                total += int(st.get("Threads", "1") or 1)
    return total


def dying(pid: int) -> bool:
    """Whether process ``pid`` can no longer run code of its own: gone, in exit, or with a SIGKILL pending (a
    process with a fatal signal pending cannot fork either, so it adds nobody behind it)."""
    status = _proc_status(Path("/proc", str(pid)))
    if not status:
        return True
    pending = int(status.get("SigPnd", "0"), 16) | int(status.get("ShdPnd", "0"), 16)
    if pending & SIGKILL_PENDING:
        return True
    try:
        flags = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[6])   # field 9
    except (OSError, IndexError, ValueError):
        return True
    return bool(flags & PF_EXITING)


def wait_gone(pids: list[int], timeout: float) -> bool:
    """Wait until every process of ``pids`` has exited (a zombie counts as exited) or ``timeout`` seconds passed:
    woken by pidfds where the OS has them, else one short sleep. -> whether all are known to have exited."""
    fds = []
    try:
        for pid in pids:
            try:
                fds.append(os.pidfd_open(pid))
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while fds and (left := deadline - time.monotonic()) > 0:
            ready = select.select(fds, [], [], left)[0]
            for fd in ready:
                fds.remove(fd)
                os.close(fd)
        return not fds
    except (AttributeError, OSError):    # no pidfd_open (Python < 3.9, Linux < 5.3)
        time.sleep(_KILL_POLL_SECONDS)
        return False
    finally:
        for fd in fds:
            os.close(fd)


def kill_uid(uid: int, timeout: float = 10.0) -> None:
    """SIGKILL every process of ``uid`` at once: ``kill(-1)`` sent by a forked helper running as ``uid``.

    ``kill(-1)`` walks the process list under the kernel's task-list lock, so a fork bomb cannot add a
    process behind it. Repeated until no live (non-zombie) process of ``uid`` is left or ``timeout``
    seconds passed (SIGKILL takes effect when the target is next scheduled). Where every process left is
    already :func:`dying` (the usual case: the process group's SIGKILL reached them and a PID namespace is
    being torn down), none can start another, so their exit is waited for without a sweep, and once they have
    exited no process of ``uid`` is left (forking a large evaluator, polling and scanning ``/proc`` again cost
    more than the grading itself). The helper only makes system calls before ``os._exit``, so forking a
    threaded evaluator is safe here.
    """
    deadline = time.monotonic() + timeout
    while (pids := pids_of_uid(uid)) and time.monotonic() < deadline:
        if all(dying(p) for p in pids):
            if wait_gone(pids, min(_EXIT_WAIT_SECONDS, max(0.0, deadline - time.monotonic()))):
                return
            continue
        pid = os.fork()
        if pid == 0:   # child: drop to the uid, signal all of its processes, leave without cleanup
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        wait_gone(pids, min(_KILL_POLL_SECONDS, max(0.0, deadline - time.monotonic())))


def interpreter(isolated: bool) -> str | None:
    """The Python that runs sandboxed programs (stdlib is all they may rely on).

    Not isolated: this interpreter. Isolated (a fresh uid): the first of ``$TSPD_SANDBOX_PYTHON``, this
    interpreter, ``/usr/bin/python3``, ``python3`` on PATH that an unprivileged uid can start (a venv
    whose base interpreter lives under a private home such as /root cannot be). None if there is none:
    the sandbox then runs under the evaluator's uid without the uid layer, with a warning.
    """
    if not isolated:
        return sys.executable
    if isolated not in _interpreters:
        candidates = [os.environ.get("TSPD_SANDBOX_PYTHON"), sys.executable, "/usr/bin/python3",
                      shutil.which("python3")]
        found = next((c for c in candidates if c and _usable_by_other_uid(c)), None)
        if found is None:
            warnings.warn("sandbox: no Python interpreter is usable by an unprivileged uid; running generated "
                          "code as root without the process-count limit (set TSPD_SANDBOX_PYTHON)")
        _interpreters[isolated] = found
    return _interpreters[isolated]


def _usable_by_other_uid(python: str) -> bool:
    """Can a fresh unprivileged uid start ``python`` with the modules the boot code needs?"""
    uid = claim_uid()
    try:
        probe = subprocess.run([python, "-I", "-B", "-c", "import json, resource, runpy, sys; "
                                "assert sys.version_info >= (3, 8)"], user=uid, group=uid, extra_groups=[],
                               cwd="/", env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=_PROBE_SECONDS)
        return probe.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        kill_uid(uid)
        release_uid(uid)


def claim_uids(n: int) -> list[int]:
    """``n`` distinct uids from UID_RANGE with no process (zombies included), no passwd entry, not in use here
    (one pass over ``/proc`` for all of them: a graded run claims two)."""
    import pwd
    rng = random.SystemRandom()
    with _uid_lock:
        busy, got = {owner for _, owner in _owners()}, []
        for _ in range(100 * n):   # collisions are rare; give up loudly rather than loop forever
            uid = rng.randrange(*UID_RANGE)
            if uid in _uids_in_use or uid in busy:
                continue
            try:
                pwd.getpwuid(uid)
                continue
            except KeyError:
                pass
            _uids_in_use.add(uid)
            got.append(uid)
            if len(got) == n:
                return got
        for uid in got:
            _uids_in_use.discard(uid)
    raise SandboxError(f"no {n} free uids in {UID_RANGE}")


def claim_uid() -> int:
    """One uid as :func:`claim_uids` gives them."""
    return claim_uids(1)[0]


def release_uid(uid: int | None) -> None:
    """Give back a uid of :func:`claim_uid` (after :func:`kill_uid`)."""
    if uid is not None:
        with _uid_lock:
            _uids_in_use.discard(uid)
