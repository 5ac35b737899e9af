"""The kernel's walls of the sandbox (tspd.sandbox.isolate, .leftovers, .process): which layers hold, what a
program can no longer reach (the benchmark's data, System V IPC that outlives it, a mount it could undo), the
evaluator that is not root, and the warning given once when a wall cannot be raised."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tspd.sandbox import Limits, process, run_python, uid as sandbox_uid
from tspd.sandbox.allowlist import allowlist
from tspd.tasks.registry import get_task

IS_ROOT = os.geteuid() == 0
def machine_can(flags: int) -> bool:
    """Can a process of this user make these namespaces here (asked of libc in a throwaway interpreter, not of
    the sandbox, so that a sandbox that stopped making them fails these tests instead of skipping them)?"""
    code = (f"import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nflags = {flags}\n"
            "if os.geteuid() != 0:\n    flags |= 0x10000000\nassert libc.unshare(flags) == 0\n")
    return subprocess.run([sys.executable, "-I", "-c", code], capture_output=True).returncode == 0


NET, IPC, MOUNT, PID = 0x40000000, 0x08000000, 0x00020000, 0x20000000
needs = pytest.mark.skipif


@needs(not machine_can(NET | MOUNT | PID), reason="this machine makes no network, mount or PID namespaces")
def test_every_wall_holds_and_what_was_outside_is_out_of_reach():
    program = ("import errno, os, socket\n"
               "assert [name for _, name in socket.if_nameindex()] == ['lo']\n"                  # no other interface
               "assert socket.socket().connect_ex(('127.0.0.1', 9)) == errno.ENETUNREACH\n"     # and it is down
               "assert os.listdir('/tmp') == [] or all(n.startswith('tspd-sandbox-') for n in os.listdir('/tmp'))\n"
               "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
               "assert libc.open(b'/etc/tspd-no', 0o101, 0o644) == -1 and ctypes.get_errno() == errno.EROFS\n"
               "assert libc.umount2(b'/tmp', 2) == -1 and ctypes.get_errno() == errno.EPERM\n")
    r = run_python(program, Limits(guard=False))
    assert r.passed, r.stderr
    assert set(r.isolation) >= {"net", "ipc", "mount", "readonly", "allowlist", "pid"} and "guard" not in r.isolation


def test_the_benchmark_data_and_the_repository_are_hidden():
    task = get_task("humaneval")
    sample = task.samples(1)[0]
    peek = (f"    import os\n    seen = os.listdir({str(task.data_root)!r}) if os.path.isdir({str(task.data_root)!r}) else []\n"
            f"    assert seen == [] and not os.path.exists({str(Path(__file__).resolve())!r}), 'visible'\n"
            "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n")
    if not machine_can(MOUNT):
        pytest.skip("no mount namespace here: the data cannot be hidden")
    g = task.grade(sample, peek)
    assert g["correct"], g["reason"]


@needs(not machine_can(IPC), reason="no IPC namespace here")
def test_system_v_shared_memory_does_not_outlive_the_run():
    program = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
               "assert libc.shmget(0, 1 << 20, 0o1000 | 0o600) >= 0\n")   # IPC_PRIVATE, IPC_CREAT: kept after exit
    r = run_python(program)
    assert r.passed, r.stderr
    owners = [line.split()[7] for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]]
    assert str(r.uid) not in owners


@needs(not IS_ROOT, reason="needs a second uid to act as an evaluator that is not root")
@pytest.mark.parametrize("allow", [False, True], ids=["nothing-on-stdin", "the-allowlist-on-stdin"])
def test_an_evaluator_that_is_not_root_gets_the_walls_through_a_user_namespace(tmp_path, allow):
    """The boot run directly by an unprivileged uid (what ``run_python`` does for a user who is not root). With nothing
    on stdin it compiles its modules from source (what an interpreter of another bytecode version does) and, given no
    allowlist, shows the read-only view; given the allowlist, it builds the allowlist root inside the user namespace.
    Either way its PID namespace has a /proc of its own."""
    python = sandbox_uid.interpreter(True)
    if python is None:
        pytest.skip("no interpreter an unprivileged uid can start")
    given = json.dumps({"allow": allowlist(python, process.ENV)}).encode() if allow else b""
    uid = sandbox_uid.claim_uid()
    os.chmod(tmp_path, 0o755)
    work = tmp_path / "work"
    work.mkdir(mode=0o700)
    (work / "program.py").write_text(
        "import ctypes, errno, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "assert libc.umount2(b'/tmp', 2) == -1 and ctypes.get_errno() == errno.EPERM\n"
        "assert open('/proc/self/status').read().split('CapEff:')[1].split()[0] == '0' * 16\n"
        "assert sorted(n for n in os.listdir('/proc') if n.isdigit()) == ['1', '2']\n"
        "assert ('work' in os.listdir('/')) is not " + str(allow) + ", os.listdir('/')\n"
        "import socket\nprint([name for _, name in socket.if_nameindex()])\n")
    os.chown(work, uid, uid)
    os.chown(work / "program.py", uid, uid)
    status_r, status_w = os.pipe()
    go_r, go_w = os.pipe()
    stdin_r, stdin_w = os.pipe()
    config = {"role": "program", "uid": None, "rlimits": [], "guard": False, "namespaces": True, "hide": [],
              "status_fd": status_w, "go_fd": go_r}
    try:
        child = subprocess.Popen([python, "-I", "-B", process.BOOT, json.dumps(config)], cwd=work, user=uid, group=uid,
                                 extra_groups=[], pass_fds=(status_w, go_r), env={"PATH": "/usr/bin:/bin"},
                                 stdin=stdin_r, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        os.close(stdin_r)
        os.write(stdin_w, given)   # the allowlist fits the pipe's buffer
        os.close(stdin_w)
        os.close(status_w)
        os.close(go_r)
        status = json.loads(os.read(status_r, 1 << 16))
        os.write(go_w, b"g")
        os.close(go_w)
        out = child.communicate(timeout=60)[0].decode()
    finally:
        sandbox_uid.kill_uid(uid)
        sandbox_uid.release_uid(uid)
        os.close(status_r)
    if not status["userns"]:
        pytest.skip(f"no unprivileged user namespaces here: {status['why']}")
    assert status["net"] and status["mount"] and status["readonly"] and status["pid"] and status["proc"], status
    assert status["allowlist"] is allow, status
    assert child.returncode == 0 and out.strip() == "['lo']", out


def test_a_wall_that_cannot_be_raised_is_said_once(monkeypatch, tmp_path):
    monkeypatch.setattr(process, "_warned", set())
    child = process.Child("program", tmp_path, None, Limits())
    child.status = {"net": False, "mount": True, "allowlist": True, "pid": True, "proc": True,
                    "why": ["unshare(CLONE_NEWNET): Operation not permitted"]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        child._warn_about_walls()
        child._warn_about_walls()
    assert len(caught) == 1 and "no network namespace" in str(caught[0].message)
    assert "Operation not permitted" in str(caught[0].message)


def test_the_threat_model_page_names_tests_that_exist():
    """book/sandbox.md shows each contained threat with a test: every test it names is defined in tests/."""
    root = Path(__file__).resolve().parents[1]
    page = (root / "book" / "sandbox.md").read_text()
    rows = "\n".join(line for line in page.splitlines() if line.startswith("|"))   # the table of what is contained
    named = set(re.findall(r"(?:::|`)(test_\w+)`", rows))
    defined = {m for p in (root / "tests").glob("test_*.py") for m in re.findall(r"^def (test_\w+)", p.read_text(), re.M)}
    assert len(named) >= 15 and named - defined == set()


@needs(not IS_ROOT or not machine_can(MOUNT), reason="remounting needs root and a mount namespace")
def test_kernels_without_mount_setattr_get_every_mount_remounted_read_only():
    """The fallback of isolate (kernels before 5.12), run in a throwaway mount namespace."""
    code = ("import ctypes, errno, os\nfrom tspd.sandbox import isolate\n"
            "assert isolate.libc.unshare(isolate.CLONE_NEWNS) == 0\n"
            "isolate.mount(None, '/', None, isolate.MS_REC | isolate.MS_PRIVATE)\n"
            "isolate.remount_each_read_only()\n"
            "try:\n    open('/etc/tspd-no', 'w')\nexcept OSError as e:\n    assert e.errno == errno.EROFS, e\n"
            "else:\n    raise SystemExit('/etc is writable')\n"
            "open('/dev/null', 'w').write('x')\n"                         # a device on a read-only mount still works
            "assert 'ro' in open('/proc/self/mountinfo').read().split()[5].split(',')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert not os.path.exists("/etc/tspd-no")
