"""The code sandbox (tspd.sandbox): hostile programs end in bounded time, with a clear reason, and the
process running the sandbox (this test process) survives all of them."""
from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

import pytest

from tspd import sandbox
from tspd.sandbox import Limits, classify, last_exception, run_python

# Small limits keep the slow cases short; the bounds below are generous (a loaded 2-core machine).
FAST = Limits(wall_seconds=4, cpu_seconds=2, memory_bytes=512 * sandbox.MIB)
BOUND = 60.0   # seconds any single hostile run may take, start-up and cleanup included
IS_ROOT = os.geteuid() == 0


def run(program: str, limits: Limits = FAST):
    t0 = time.monotonic()
    result = run_python(program, limits)
    elapsed = time.monotonic() - t0
    assert elapsed < BOUND, f"run took {elapsed:.1f}s"
    return result


def test_passing_program():
    r = run("def add(a, b):\n    return a + b\n\nassert add(2, 3) == 5\nprint('hi')")
    assert r.passed and r.reason == "passed" and r.returncode == 0
    assert r.stdout.strip() == "hi"   # the sentinel is not shown


def test_failing_assertion_names_the_error():
    r = run("assert 1 + 1 == 3, 'bad math'")
    assert not r.passed and r.reason == "failed: AssertionError: bad math"


def test_syntax_and_name_errors():
    assert run("def f(:\n    pass").reason == "failed: SyntaxError: invalid syntax"
    assert run("undefined_name + 1").reason.startswith("failed: NameError: name 'undefined_name'")


def test_future_import_at_top_still_works():
    assert run("from __future__ import annotations\ndef f(x: 'int') -> 'int':\n    return x\nassert f(1) == 1").passed


def test_infinite_loop_hits_the_cpu_limit():
    r = run("while True:\n    pass")
    assert not r.passed and r.reason in ("timeout (cpu limit)", "timeout")


def test_sleeping_program_hits_the_wall_clock_limit():
    r = run("import time\ntime.sleep(600)")
    assert not r.passed and r.reason == "timeout"


@pytest.mark.parametrize("exit_call", ["import sys; sys.exit(0)", "import os; os._exit(0)", "raise SystemExit"])
def test_exiting_cleanly_before_the_tests_is_a_failure(exit_call):
    r = run(f"{exit_call}\nassert False, 'tests that never run'")
    assert not r.passed and r.returncode == 0
    assert r.reason == "failed: exited before the tests finished"


def test_nonzero_exit_code():
    assert run("import sys; sys.exit(3)").reason == "exit code 3"


def test_memory_hog_fails_with_memory():
    assert run("x = bytearray(8 * 2**30)").reason == "memory"
    assert run("chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 2**20))").reason == "memory"


def test_deep_recursion_fails():
    assert run("def f(n):\n    return f(n + 1)\nf(0)").reason.startswith("failed: RecursionError")
    r = run("import sys\nsys.setrecursionlimit(10**9)\ndef f(n):\n    return f(n + 1) + 1\nf(0)")
    assert not r.passed   # memory, cpu limit or a stack overflow signal, depending on the interpreter


def test_huge_output_is_capped():
    r = run("while True:\n    print('x' * 100_000)")
    assert not r.passed and r.reason == "output or file size limit"
    assert len(r.stdout) < 2 * FAST.output_bytes and "[truncated" in r.stdout


@pytest.mark.parametrize("target", ["tmp", "private"])
def test_writing_outside_the_sandbox_is_refused(tmp_path, target):
    if target == "tmp":   # world-writable: only the Python guard stands in the way
        outside = Path("/tmp") / f"tspd-escape-{secrets.token_hex(6)}"
    else:
        outside = tmp_path / "escape.txt"
    r = run(f"open({str(outside)!r}, 'w').write('escaped')\n")
    assert not r.passed and r.reason.startswith("failed: PermissionError")
    assert not outside.exists()
    r = run(f"import os\nfd = os.open({str(outside)!r}, os.O_WRONLY | os.O_CREAT)\nos.write(fd, b'x')")
    assert not r.passed and not outside.exists()


@pytest.mark.skipif(not IS_ROOT, reason="uid isolation is only used when the evaluator runs as root")
def test_without_the_guard_the_uid_still_confines_writes(tmp_path):
    outside = tmp_path / "escape.txt"   # pytest's tmp dirs belong to root and are private
    r = run(f"open({str(outside)!r}, 'w').write('escaped')", Limits(wall_seconds=4, guard=False, namespaces=False))
    assert not r.passed and "Permission denied" in r.reason and not outside.exists()


def test_writing_inside_the_sandbox_is_allowed():
    r = run("import os, tempfile\nopen('out.txt', 'w').write('ok')\nfd, p = tempfile.mkstemp()\n"
            "os.remove('out.txt')\nassert os.path.realpath(p).startswith(os.path.realpath(os.getcwd()))")
    assert r.passed, r.stderr


def test_sandbox_directory_is_removed(monkeypatch):
    made = []
    real_mkdtemp = sandbox.tempfile.mkdtemp

    def recording_mkdtemp(*args, **kwargs):
        made.append(real_mkdtemp(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(sandbox.tempfile, "mkdtemp", recording_mkdtemp)
    program = ("import os\nos.makedirs('d/e')\nopen('d/e/f', 'w').write('x')\n"
               "os.chmod('d/e', 0)\nos.chmod('d', 0o500)\n")   # try to make the cleanup fail
    assert run(program).passed
    assert len(made) == 1 and not Path(made[0]).exists()


@pytest.mark.parametrize("guard", [True, False])
def test_killing_the_parent_fails_and_the_evaluator_survives(guard):
    if not guard and not IS_ROOT:
        pytest.skip("without the guard only a different uid protects the parent")
    r = run("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.killpg(os.getpgid(os.getppid()), 9)",
            Limits(wall_seconds=4, guard=guard))
    assert not r.passed and r.reason.startswith("failed: PermissionError")
    assert run("assert True").passed   # still here


def test_starting_processes_is_refused_by_the_guard():
    for code in ["import os; os.system('true')", "import subprocess; subprocess.run(['true'])",
                 "import os; os.fork()"]:
        r = run(code)
        assert not r.passed and r.reason.startswith("failed: PermissionError")


FORK_BOMB = ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")


def test_fork_bomb_is_blocked_by_the_guard():
    r = run(FORK_BOMB.replace("except OSError", "except BlockingIOError"))
    assert not r.passed and r.reason.startswith("failed: PermissionError")


def test_fork_bomb_without_the_guard_ends_in_bounded_time():
    """The OS layers alone: the process limit caps the bomb, the timeout ends it, every process dies."""
    limits = Limits(wall_seconds=3, cpu_seconds=2, max_processes=16, guard=False)
    t0 = time.monotonic()
    r = run(FORK_BOMB, limits)
    assert time.monotonic() - t0 < 30
    assert not r.passed and r.reason in ("timeout", "timeout (cpu limit)")
    if r.uid is not None:
        assert sandbox.pids_of_uid(r.uid) == []   # zombies aside, nothing of the sandbox uid is alive
    assert run("assert sum(range(10)) == 45").passed   # the machine is still usable


def test_children_that_escape_the_process_group_are_killed():
    if not IS_ROOT:
        pytest.skip("only the per-run uid can find processes that left the process group")
    code = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(600)\n"
    r = run(code, Limits(wall_seconds=4, guard=False))
    assert r.passed and r.uid is not None
    assert sandbox.pids_of_uid(r.uid) == []


def test_environment_is_not_inherited(monkeypatch):
    monkeypatch.setenv("TSPD_SECRET_TOKEN", "hunter2")
    r = run("import os\nassert 'TSPD_SECRET_TOKEN' not in os.environ\nassert os.getcwd() == os.environ['HOME']")
    assert r.passed, r.stderr


# ---- classification ------------------------------------------------------------------------------
def test_classify():
    assert classify(0, False, "", True) == "passed"
    assert classify(0, False, "", False) == "failed: exited before the tests finished"
    assert classify(None, True, "", False) == "timeout"
    assert classify(-signal.SIGXCPU, False, "", False) == "timeout (cpu limit)"
    assert classify(-signal.SIGSEGV, False, "", False) == "killed by signal 11 (SIGSEGV)"
    assert classify(-signal.SIGXFSZ, False, "", False) == "output or file size limit"
    assert classify(1, False, "Traceback ...\nMemoryError\n", False) == "memory"
    assert classify(1, False, "Traceback ...\nValueError: bad\n", False) == "failed: ValueError: bad"
    assert classify(2, False, "something odd\n", False) == "exit code 2"


def test_last_exception():
    tb = "Traceback (most recent call last):\n  File \"x\", line 1\nmymod.CustomError: it broke\n"
    assert last_exception(tb) == "CustomError: it broke"
    assert last_exception("Traceback:\nAssertionError\n") == "AssertionError"
    assert last_exception("") is None
