"""One sandboxed interpreter as the grader sees it: started, told to go, waited for, ended with everything
it started, and its leftovers counted.

The child is started as the evaluator (``python -I -B boot.py CONFIG``, a new session, stdout and stderr
to files the grader owns, on stdin its modules' code, the interpreter's allowlist (:mod:`.allowlist`) and
the tests' spec, then ``/dev/null``) and lowers itself (:mod:`.boot`): namespaces and its root first, then
the uid. Before it runs any code of the program it reports on a status pipe which walls held and waits for
a go byte; meanwhile the grader pins its private mounts (:mod:`.leftovers`). Ending it kills its process
group (the PID 1 of its PID namespace with it, and so every process in that namespace) and, under a fresh
uid, every process of that uid (:func:`.uid.kill_uid`), the ones that left the group included.

Where the evaluator cannot raise a wall (a network, mount or PID namespace, the allowlist root), the grader
says so once per process (a warning) naming what the program then sees, and relies on the guard's refusal
of sockets and on the sweep by uid.
"""
from __future__ import annotations

import base64
import fcntl
import importlib.util
import json
import marshal
import os
import select
import signal
import subprocess
import threading
import time
import warnings
from pathlib import Path

from tspd.sandbox import leftovers
from tspd.sandbox.allowlist import allowlist
from tspd.sandbox.limits import Limits, rlimits
from tspd.sandbox.uid import SandboxError, interpreter, kill_uid

BOOT = str(Path(__file__).with_name("boot.py"))
# Environment of the child: nothing inherited (no tokens, no proxies); one thread per numeric library.
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8",
       **{v: "1" for v in _THREAD_VARS}}
_STATUS_BYTES = 1 << 16
_PIPE_DEFAULT, _PIPE_MAX = 1 << 16, 1 << 20   # Linux's pipe buffer, and /proc/sys/fs/pipe-max-size's default

_CHILD_MODULES = ("isolate", "root", "reaper", "guard", "codec", "serve", "check")   # what boot.py loads, compiled here once

_warned: set[str] = set()
_once_lock = threading.Lock()
_bundle: list[str] = []


def warn_once(message: str) -> None:
    """A warning shown once per process (per run of ``python -m tspd eval`` or ``grade``)."""
    with _once_lock:
        if message in _warned:
            return
        _warned.add(message)
    warnings.warn(message, stacklevel=3)


def code_bundle() -> str:
    """The child modules compiled and marshalled (base64), once per process: a child that would compile them
    again spends about 5 ms of CPU on it, per run."""
    with _once_lock:
        if not _bundle:
            paths = {name: Path(__file__).with_name(f"{name}.py") for name in _CHILD_MODULES}
            codes = {name: compile(path.read_text(encoding="utf-8"), str(path), "exec") for name, path in paths.items()}
            _bundle.append(base64.b64encode(marshal.dumps(codes)).decode("ascii"))
    return _bundle[0]


class Child:
    """A sandboxed interpreter in ``role`` (see :mod:`.boot`), working in ``work`` under ``uid`` (None: the
    evaluator's). ``fds``: the role's pipe ends by config key (``request_fd``, ...), passed to the child."""

    def __init__(self, role: str, work: Path, uid: int | None, limits: Limits, hide=(), fds: dict | None = None,
                 handshake: bool = True, spec: dict | None = None):
        self.role, self.work, self.uid, self.limits, self.hide = role, work, uid, limits, tuple(hide)
        self.fds, self.handshake_wanted, self.spec = dict(fds or {}), handshake, spec
        self.proc: subprocess.Popen | None = None
        self.status: dict = {}
        self._pins: dict[str, int] = {}
        self._status_r = self._go_w = None
        self._ends_held = True   # the role's pipe ends are still ours to close (until start hands them over)

    def close_unused(self) -> None:
        """Close the role's pipe ends when the child was never started (an error came first)."""
        if self._ends_held:
            self._ends_held = False
            for fd in self.fds.values():
                os.close(fd)

    def start(self, out, err) -> None:
        config = {"role": self.role, "uid": self.uid, "rlimits": rlimits(self.limits, self.uid),
                  "guard": self.limits.guard, "namespaces": self.limits.namespaces, "hide": list(self.hide),
                  **self.fds}
        ends = list(self.fds.values())
        self._status_r, status_w = os.pipe()   # every child reports its walls; only a held-back one waits for a go
        config.update(status_fd=status_w)
        ends.append(status_w)
        if self.handshake_wanted:
            go_r, self._go_w = os.pipe()
            config.update(go_fd=go_r)
            ends.append(go_r)
        cmd = [interpreter(self.uid is not None), "-I", "-B", BOOT, json.dumps(config)]
        env = {**ENV, "HOME": str(self.work), "TMPDIR": str(self.work)}
        allow = allowlist(cmd[0], ENV) if self.limits.namespaces else None
        given = json.dumps({"magic": importlib.util.MAGIC_NUMBER.hex(), "code": code_bundle(), "allow": allow,
                            "spec": self.spec})
        stdin_r, stdin_w = _input_pipe(len(given))
        try:
            self.proc = subprocess.Popen(cmd, cwd=self.work, env=env, stdin=stdin_r, stdout=out,
                                         stderr=err, start_new_session=True, close_fds=True, pass_fds=ends)
        except OSError as e:
            os.close(stdin_w)
            raise SandboxError(f"cannot start the sandboxed interpreter {cmd[0]}: {e}") from e
        finally:
            self._ends_held = False
            for fd in [stdin_r, *ends]:   # the child's ends: the grader keeps only its own
                os.close(fd)
        try:   # fits the pipe, so this does not wait for the child; if not, the child reads it first thing
            view = memoryview(given.encode())
            while view:
                view = view[os.write(stdin_w, view):]
        except OSError:
            pass   # it died already: its exit says why
        finally:
            os.close(stdin_w)

    def go(self, deadline: float) -> None:
        """Read the child's status (before any code of the program ran), pin its private mounts, let it go."""
        if not self.handshake_wanted:
            return
        self._read_status(deadline)
        for directory in self.status.get("private", []):
            fd = leftovers.pin(self.proc.pid, directory)
            if fd is not None:
                self._pins[directory] = fd
        try:
            os.write(self._go_w, b"g")
        except OSError:
            pass
        finally:
            os.close(self._go_w)
        self._warn_about_walls()

    def _read_status(self, deadline: float) -> None:
        """The child's status line (written by its boot before any role code ran; {} where it died first)."""
        if self._status_r is None:
            return
        try:
            line = read_line(self._status_r, deadline)
            self.status = json.loads(line) if line else {}
        except (ValueError, OSError):
            self.status = {}
        finally:
            os.close(self._status_r)
            self._status_r = None

    def _warn_about_walls(self) -> None:
        if not self.status or not self.limits.namespaces:
            return
        why = "; ".join(self.status.get("why", []))[:300]
        if not self.status.get("net"):
            warn_once(f"sandbox: no network namespace ({why}); generated code is kept off the network only by "
                      "the Python guard, which ctypes bypasses")
        if not self.status.get("mount"):
            after = ("are swept by uid after each run" if self.uid is not None else
                     "stay (the program runs under the evaluator's uid)")
            warn_once(f"sandbox: no mount namespace ({why}); generated code sees the machine's file system and "
                      f"other processes, and files that it writes through ctypes in /tmp, /var/tmp, /dev/shm and "
                      f"/run/lock {after}")
            return
        if not self.status.get("allowlist"):
            warn_once(f"sandbox: no allowlist root ({why}); generated code sees the machine's file system "
                      "read-only (the benchmark's data and this repository hidden, other copies of the data not)")
        seen = "no /proc" if self.status.get("allowlist") else "every process's command line in /proc"
        if not self.status.get("pid"):
            warn_once(f"sandbox: no PID namespace ({why}); generated code sees {seen}, and processes it starts "
                      "are ended by uid")
        elif not self.status.get("proc"):
            warn_once(f"sandbox: no /proc of the sandbox's own ({why}); generated code sees {seen}")

    def wait(self, deadline: float) -> bool:
        """Wait for the child to exit, until ``deadline``; True if it did (it is not reaped here)."""
        return _wait_exit(self.proc, max(0.0, deadline - time.monotonic()))

    def end(self) -> int | None:
        """Kill the child's process group and every process of its uid; reap it. -> its return code."""
        if self.proc is None:
            return None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self._read_status(time.monotonic() + 1.0)   # a child without a go (the tests): what its boot reported, if it did
        if self.uid is not None:   # after the group is gone: usually nothing is left to find
            kill_uid(self.uid)
        return self.proc.returncode

    def files_removed(self) -> int:
        """After :meth:`end`: files left outside the working directory, counted in the pinned private mounts
        (then released) or swept by uid from the world-writable directories that were not private."""
        total = 0
        for directory, fd in self._pins.items():
            total += leftovers.count_pinned(fd, self.status.get("skeleton", {}).get(directory))
        self._pins = {}
        if self.uid is not None and not self.status.get("readonly"):   # read-only: nothing else was writable
            shared = [d for d in leftovers.WORLD_WRITABLE if d not in self.status.get("private", [])]
            total += leftovers.sweep_uid(self.uid, shared)
        return total

    def isolation(self) -> tuple[str, ...]:
        """The layers that held for this child."""
        held = [("uid", self.uid is not None), ("net", self.status.get("net")), ("ipc", self.status.get("ipc")),
                ("mount", self.status.get("mount")), ("readonly", self.status.get("readonly")),
                ("allowlist", self.status.get("allowlist")), ("pid", self.status.get("pid")),
                ("guard", self.limits.guard)]
        return tuple(name for name, ok in held if ok)


def _input_pipe(size: int) -> tuple[int, int]:
    """A pipe whose buffer holds ``size`` bytes where the kernel allows it (``F_SETPIPE_SZ``; 64 KiB otherwise)."""
    r, w = os.pipe()
    if size > _PIPE_DEFAULT:
        try:
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, min(size, _PIPE_MAX))
        except OSError:
            pass
    return r, w


def read_line(fd: int, deadline: float) -> bytes:
    """Bytes from ``fd`` up to a newline, end of file or ``deadline`` (whichever comes first)."""
    data = b""
    while not data.endswith(b"\n") and len(data) < _STATUS_BYTES:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, _STATUS_BYTES)
        if not chunk:
            break
        data += chunk
    return data


def _wait_exit(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait for ``proc`` to exit, up to ``timeout`` seconds; True if it did (it is not reaped here).

    Uses a pidfd where the OS has one (woken at exit), else ``Popen.wait``'s polling loop.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready)
    finally:
        os.close(fd)
