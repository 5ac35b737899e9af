"""Run untrusted Python (a generated program plus its tests) in a separate, limited process.

Used by the HumanEval and MBPP graders (pass@1). Four layers, each covering what the others miss:

1. **Process**: a fresh interpreter (``python -I -B``) in a new session, so the whole process group
   is killed with ``os.killpg`` on timeout; stdin is ``/dev/null``; stdout/stderr go to files outside
   the working directory and only their first ``output_bytes`` are kept.
2. **Resource limits** (set by the child before the program runs): CPU time (``RLIMIT_CPU``), address
   space (``RLIMIT_AS``), file size (``RLIMIT_FSIZE``, also caps the captured output), no core dumps,
   and a process count (``RLIMIT_NPROC``) against fork bombs.
3. **Identity**: Linux ignores ``RLIMIT_NPROC`` for root, so when the evaluator runs as root the child
   runs under a fresh unprivileged uid/gid with no supplementary groups. Then the process limit holds,
   the child cannot write to root's files or signal the evaluator, and after the run every process of
   that uid is killed at once (``kill(-1)`` sent from that uid), even ones that left the process group.
4. **Python guard** (an audit hook installed before the program; audit hooks cannot be removed):
   refuses writes, deletions and renames outside the working directory (``/tmp`` is world-writable, so
   layer 3 alone does not stop those), signals to processes outside the sandbox's process group, and
   starting processes. It is bypassable with ``ctypes``; layers 1-3 are not.

The program passes only if it exits with status 0 *and* prints a random sentinel that is appended after
the tests, so ``sys.exit(0)`` or ``os._exit(0)`` before the tests ran counts as a failure.
"""
from __future__ import annotations

import json
import os
import random
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# Unprivileged uids for sandboxed children when the evaluator is root: a block below 65534 (nobody) and
# above the usual system and login ranges, inside the id map of typical user namespaces (0-65535).
UID_RANGE = (40_000, 60_000)

_KILL_POLL_SECONDS = 0.01   # between kill sweeps while killed processes are still exiting

# Environment of the child: nothing inherited (no tokens, no proxies); one thread per numeric library.
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run (defaults are generous: 2 shared cores, cold starts)."""
    wall_seconds: float = 30.0       # whole run, interpreter start-up included
    cpu_seconds: int = 20            # RLIMIT_CPU (SIGXCPU, then SIGKILL 1 s later); the reference
                                     # of mbpp/123 alone needs ~10 s of CPU on a slow core
    memory_bytes: int = 2 * GIB      # RLIMIT_AS (virtual address space)
    file_bytes: int = 16 * MIB       # RLIMIT_FSIZE: any file written, captured stdout/stderr included
    max_processes: int = 32          # RLIMIT_NPROC: processes/threads of the sandbox uid
    output_bytes: int = 10 * KIB     # kept from the start of each of stdout and stderr
    guard: bool = True               # install the Python audit-hook guard (layer 4)
    isolate_uid: bool = True         # as root: run under a fresh unprivileged uid (layer 3)


@dataclass
class SandboxResult:
    """Outcome of one run. ``reason`` is "passed", "failed: <Exception>: <message>", "timeout",
    "timeout (cpu limit)", "memory", "output or file size limit", "killed by signal N (NAME)",
    "exit code N" or "failed: exited before the tests finished"."""
    passed: bool
    reason: str
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    uid: int | None = None   # the unprivileged uid used, None when not isolated


class SandboxError(RuntimeError):
    """The sandbox itself could not be set up (not a failure of the program under test)."""


# --------------------------------------------------------------------------------------------
# Code run inside the child before the program: limits, guard, then the program as __main__.
# argv: [-c, <json config>, <program path>]
# --------------------------------------------------------------------------------------------
_BOOT = r'''
import json, os, resource, runpy, sys
_cfg = json.loads(sys.argv[1])
_prog = sys.argv[2]
for _name, _soft, _hard in _cfg["rlimits"]:
    resource.setrlimit(getattr(resource, _name), (_soft, _hard))
if _cfg["guard"]:
    def _install(root):
        realpath, fsdecode, sep = os.path.realpath, os.fsdecode, os.sep
        write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
        allowed = ("/dev/null",)
        own_pgid = os.getpgid(0)
        spawn = {"os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
                 "subprocess.Popen", "pty.spawn"}
        # event -> indices of the path arguments it mutates
        mutate = {"os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1), "os.mkdir": (0,),
                  "os.symlink": (1,), "os.link": (0, 1), "os.truncate": (0,), "os.chmod": (0,),
                  "os.chown": (0,), "os.utime": (0,), "shutil.rmtree": (0,), "os.mkfifo": (0,),
                  "os.mknod": (0,)}

        def inside(path):
            if isinstance(path, int):          # an already open descriptor
                return True
            p = realpath(fsdecode(path))
            return p == root or p.startswith(root + sep) or p in allowed

        def deny(what):
            raise PermissionError("sandbox: " + what)

        def hook(event, args):
            if event == "open":
                path, mode, flags = args
                writing = ((isinstance(mode, str) and any(c in mode for c in "wax+"))
                           or (isinstance(flags, int) and bool(flags & write_flags)))
                if writing and path is not None and not inside(path):
                    deny("write outside the sandbox directory: %s" % (path,))
            elif event in mutate:
                for i in mutate[event]:
                    if i < len(args) and args[i] is not None and not inside(args[i]):
                        deny("%s outside the sandbox directory: %s" % (event, args[i]))
            elif event in ("os.kill", "os.killpg"):
                target = args[0]
                if event == "os.killpg" or target < 0:
                    ok = abs(target) == own_pgid or target == 0
                else:
                    try:
                        ok = target == 0 or os.getpgid(target) == own_pgid
                    except OSError:
                        ok = True                  # no such process: let kill() report it
                if not ok:
                    deny("signal to a process outside the sandbox")
            elif event in spawn:
                deny("starting processes is not allowed (%s)" % event)
        sys.addaudithook(hook)
    _install(os.path.realpath(os.getcwd()))
    del _install
sys.argv = [_prog]
del _cfg, _name, _soft, _hard
runpy.run_path(_prog, run_name="__main__")
'''

_uid_lock = threading.Lock()
_uids_in_use: set[int] = set()


def run_python(program: str, limits: Limits = Limits(), *, require_sentinel: bool = True) -> SandboxResult:
    """Run ``program`` (Python source: solution and tests) in a sandbox and classify the outcome.

    With ``require_sentinel`` a line printing a random token is appended to the program; the run passes
    only if it exits 0 and that token was printed (the tests ran to the end).
    """
    nonce = "TSPD-SANDBOX-DONE-" + secrets.token_hex(8)
    source = program.rstrip() + "\n"
    if require_sentinel:
        source += f"\n\nprint({nonce!r}, flush=True)\n"
    uid = _claim_uid() if (limits.isolate_uid and os.geteuid() == 0 and interpreter(True)) else None
    top = None
    try:
        top = Path(tempfile.mkdtemp(prefix="tspd-sandbox-", dir=_temp_root(uid)))
        work = top / "work"
        work.mkdir()
        (work / "program.py").write_text(source, encoding="utf-8")
        if uid is not None:
            os.chmod(top, 0o711)   # traversable by the sandbox uid, not listable
            os.chown(work, uid, uid)
            os.chmod(work, 0o700)
        with open(top / "stdout", "w+b") as out, open(top / "stderr", "w+b") as err:
            returncode, timed_out, seconds = _spawn(work, out, err, uid, limits)
            stdout, stdout_tail = _read_capped(out, limits.output_bytes)
            stderr, stderr_tail = _read_capped(err, limits.output_bytes)
        sentinel_seen = nonce in stdout_tail
        if require_sentinel:
            stdout = stdout.replace(nonce + "\n", "").replace(nonce, "")
        reason = classify(returncode, timed_out, stderr_tail, sentinel_seen if require_sentinel else True)
        return SandboxResult(reason == "passed", reason, returncode, stdout, stderr, seconds, uid)
    finally:
        if top is not None:
            _remove_tree(top)
        if uid is not None:
            with _uid_lock:
                _uids_in_use.discard(uid)


def _remove_tree(path: Path) -> None:
    """Delete a sandbox directory, first giving back permissions the program may have taken away."""
    for root, dirs, _ in os.walk(path):
        for d in dirs:   # chmod before os.walk descends, so unreadable directories can be listed
            try:
                os.chmod(os.path.join(root, d), 0o700)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


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
        name = error.split(":", 1)[0]
        if name == "MemoryError":
            return "memory"
        if "[Errno 27]" in error:   # EFBIG: Python ignores SIGXFSZ, so RLIMIT_FSIZE shows up as OSError
            return "output or file size limit"
        if name == "SystemExit":
            return f"exit code {returncode}"
        return "failed: " + error
    return f"exit code {returncode}"


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


def _spawn(work: Path, out, err, uid: int | None, limits: Limits) -> tuple[int | None, bool, float]:
    """Start the child, wait up to the wall limit, clean up every process it left. -> (rc, timed_out, s)."""
    config = {"guard": limits.guard, "rlimits": _rlimits(limits, uid)}
    cmd = [interpreter(uid is not None), "-I", "-B", "-c", _BOOT, json.dumps(config), "program.py"]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work), "TMPDIR": str(work),
           "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8", **{v: "1" for v in _THREAD_VARS}}
    identity = dict(user=uid, group=uid, extra_groups=[]) if uid is not None else {}
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True, close_fds=True, **identity)
    except OSError as e:
        raise SandboxError(f"cannot start the sandboxed interpreter {cmd[0]}: {e}") from e
    try:
        timed_out = not _wait_exit(proc, limits.wall_seconds)
    finally:
        _kill_group(proc.pid)
        if uid is not None:
            kill_uid(uid)
        proc.wait()
    return proc.returncode, timed_out, time.perf_counter() - t0


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


def _rlimits(limits: Limits, uid: int | None) -> list[tuple[str, int, int]]:
    cpu = int(limits.cpu_seconds)
    nproc = limits.max_processes
    if uid is None:
        # RLIMIT_NPROC counts every task of the real uid, the evaluator's own threads included.
        nproc += count_tasks(os.getuid())
    return [("RLIMIT_CPU", cpu, cpu + 1), ("RLIMIT_AS", limits.memory_bytes, limits.memory_bytes),
            ("RLIMIT_FSIZE", limits.file_bytes, limits.file_bytes), ("RLIMIT_CORE", 0, 0),
            ("RLIMIT_NPROC", nproc, nproc)]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_capped(f, cap: int) -> tuple[str, str]:
    """(first ``cap`` bytes with a truncation note, last 4 KiB) of an output file, decoded leniently."""
    f.flush()
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    head = f.read(cap).decode("utf-8", errors="replace")
    if size > cap:
        head += f"\n...[truncated {size - cap} bytes]"
    f.seek(max(0, size - 4 * KIB))
    tail = f.read().decode("utf-8", errors="replace")
    return head, tail


# --------------------------------------------------------------------------------------------
# Unprivileged uids (root only)
# --------------------------------------------------------------------------------------------
def _proc_status(pid_dir: Path) -> dict[str, str]:
    fields = {}
    try:
        for line in (pid_dir / "status").read_text().splitlines():
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    except OSError:
        pass
    return fields


def pids_of_uid(uid: int, include_zombies: bool = False) -> list[int]:
    """Pids owned by ``uid`` (owner of /proc/<pid>, i.e. the effective uid), zombies optional."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
        except OSError:
            continue
        if include_zombies or not _proc_status(Path("/proc", name)).get("State", "Z").startswith("Z"):
            pids.append(int(name))
    return pids


def count_tasks(uid: int) -> int:
    """Tasks (threads) whose real uid is ``uid``: what RLIMIT_NPROC counts."""
    total = 0
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _proc_status(d)
            if st.get("Uid", "").split()[:1] == [str(uid)]:
                total += int(st.get("Threads", "1") or 1)
    return total


def kill_uid(uid: int, timeout: float = 10.0) -> None:
    """SIGKILL every process of ``uid`` at once: ``kill(-1)`` sent by a forked helper running as ``uid``.

    ``kill(-1)`` walks the process list under the kernel's task-list lock, so a fork bomb cannot add a
    process behind it. Repeated until no live (non-zombie) process of ``uid`` is left or ``timeout``
    seconds passed (SIGKILL takes effect when the target is next scheduled). The helper only makes
    system calls before ``os._exit``, so forking a threaded evaluator is safe here.
    """
    deadline = time.monotonic() + timeout
    while pids_of_uid(uid) and time.monotonic() < deadline:
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
        time.sleep(_KILL_POLL_SECONDS)


_interpreters: dict[bool, str | None] = {}


def interpreter(isolated: bool) -> str | None:
    """The Python that runs sandboxed programs (stdlib is all they may rely on).

    Not isolated: this interpreter. Isolated (a fresh uid): the first of ``$TSPD_SANDBOX_PYTHON``, this
    interpreter, ``/usr/bin/python3``, ``python3`` on PATH that an unprivileged uid can start (a venv
    whose base interpreter lives under a private home such as /root cannot be). None if there is none:
    the sandbox then runs under the evaluator's uid without layer 3, with a warning.
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


_PROBE_SECONDS = 30   # a cold interpreter start on a loaded machine


def _usable_by_other_uid(python: str) -> bool:
    """Can a fresh unprivileged uid start ``python`` with the modules the boot code needs?"""
    uid = _claim_uid()
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
        with _uid_lock:
            _uids_in_use.discard(uid)


def _claim_uid() -> int:
    """A uid from UID_RANGE with no process (zombies included), no passwd entry, not in use here."""
    import pwd
    rng = random.SystemRandom()
    with _uid_lock:
        for _ in range(100):   # collisions are rare; give up loudly rather than loop forever
            uid = rng.randrange(*UID_RANGE)
            if uid in _uids_in_use:
                continue
            try:
                pwd.getpwuid(uid)
                continue
            except KeyError:
                pass
            if pids_of_uid(uid, include_zombies=True):
                continue
            _uids_in_use.add(uid)
            return uid
    raise SandboxError(f"no free uid in {UID_RANGE}")


def _temp_root(uid: int | None) -> str:
    """Where sandbox directories go: the system temp dir, or /tmp if the sandbox uid cannot reach it."""
    base = tempfile.gettempdir()
    if uid is None or _traversable(Path(base)):
        return base
    if _traversable(Path("/tmp")):
        return "/tmp"
    raise SandboxError(f"{base} is not traversable by other users; set TMPDIR to a world-traversable directory")


def _traversable(path: Path) -> bool:
    """Every directory from / to ``path`` lets others search it (mode o+x)."""
    path = path.resolve()
    for p in [path, *path.parents]:
        try:
            if not p.stat().st_mode & 0o001:
                return False
        except OSError:
            return False
    return True
