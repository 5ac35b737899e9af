"""Hostile completions of HumanEval/0 against the grader (issue 69), one class at a time: a forged sentinel, an
always-equal answer, the network, files left behind. Each is graded failing with a reason; each test also runs a
control that shows the attack is real (it passes the old sentinel rule, or reaches the listener without the walls),
so none of them can pass by testing nothing."""
from __future__ import annotations

import json
import os
import secrets
import select
import socket
import subprocess
import sys

import pytest

from tspd.cli import main as cli
from tspd.sandbox import Limits, run_checked, run_python
from tspd.tasks.registry import get_task
from tspd.tasks.humaneval import build_solution, build_tests

IS_ROOT = os.geteuid() == 0
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm")
def machine_can(flags: int) -> bool:
    """Can a process of this user make these namespaces here (asked of libc in a throwaway interpreter, not of
    the sandbox, so that a sandbox that stopped making them fails these tests instead of skipping them)?"""
    code = (f"import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nflags = {flags}\n"
            "if os.geteuid() != 0:\n    flags |= 0x10000000\nassert libc.unshare(flags) == 0\n")
    return subprocess.run([sys.executable, "-I", "-c", code], capture_output=True).returncode == 0


NO_NET = not machine_can(0x40000000)   # then only the Python guard stands before the network, and ctypes passes it


@pytest.fixture(scope="module")
def task():
    return get_task("humaneval")


@pytest.fixture(scope="module")
def sample(task):
    return task.samples(1)[0]   # has_close_elements(numbers, threshold) -> bool


def old_program(sample: dict, completion: str) -> str:
    """The program the grader ran before issue 69: solution, tests and the call of check in one file (run_python
    appends the sentinel)."""
    solution, _ = build_solution(sample, completion)
    return f"{solution}\n\n{build_tests(sample)}"


RIGHT = "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
REPLAY = ("def _replay(strings):\n    import re\n    found = [t for s in strings for t in re.findall(r'TSPD-SANDBOX-DONE-[0-9a-f]{16}', s)]\n"
          "    if found:\n        print(found[-1], flush=True)\n    import os\n    os._exit(0)\n")

FORGED_SENTINEL = {
    # the program's own source file, read at import
    "source file": "    return False\n\n" + REPLAY + "import sys\n_replay([open(sys.argv[0]).read()])\n",
    # the constants of the running module's code object, at import
    "code object": "    return False\n\n" + REPLAY + "import sys\n_replay([c for c in sys._getframe().f_code.co_consts "
                   "if isinstance(c, str)])\n",
    # the frames above the call, from inside the function under test
    "frames": "    import sys\n    f, seen = sys._getframe(), []\n    while f:\n        seen += [c for c in f.f_code.co_consts "
              "if isinstance(c, str)]\n        f = f.f_back\n    _replay(seen)\n\n" + REPLAY,
    # an atexit hook that replays the source after the tests' assertion failed, and forces exit status 0
    "atexit": "    return 'wrong'\n\n" + REPLAY + "import atexit, sys\natexit.register(lambda: _replay([open(sys.argv[0]).read()]))\n",
}


@pytest.mark.parametrize("name", sorted(FORGED_SENTINEL))
def test_a_forged_sentinel_passes_the_old_rule_and_fails_the_grader(task, sample, name):
    completion = FORGED_SENTINEL[name]
    assert run_python(old_program(sample, completion)).passed, "control: the forge no longer forges"
    g = task.grade(sample, completion)
    assert g["correct"] is False and g["reason"] in ("failed: exited before the tests finished", "failed: AssertionError")


def test_a_pass_needs_the_tests_process_to_exit_zero_too():
    """Where the program shares the evaluator's uid (no root, no uid isolation) it may reach the grader's end of
    the verdict pipe through /proc; a line it wrote there is no pass unless the tests' process, which it cannot
    touch, also exits 0 (tspd.sandbox.check.tests_role)."""
    from tspd.sandbox.checked import _reason
    assert _reason({"passed": True}, None, False, "", 0, "") == "passed"
    assert _reason({"passed": True}, None, False, "", 1, "").startswith("failed: the tests' process did not confirm")
    assert _reason({"passed": True}, None, False, "", -9, "") != "passed"


ALWAYS_EQUAL = {
    "object": "    class Anything:\n        def __eq__(self, other):\n            return True\n    return Anything()\n",
    "str subclass": "    class S(str):\n        def __eq__(self, other):\n            return True\n        __hash__ = str.__hash__\n"
                    "    return S('no')\n",
    "int subclass": "    class I(int):\n        def __eq__(self, other):\n            return True\n        __hash__ = int.__hash__\n"
                    "    return I(7)\n",
    "tuple subclass": "    class T(tuple):\n        def __eq__(self, other):\n            return True\n        __hash__ = tuple.__hash__\n"
                      "    return T()\n",
}


@pytest.mark.parametrize("name", sorted(ALWAYS_EQUAL))
def test_an_always_equal_answer_passes_the_old_rule_and_fails_the_grader(task, sample, name):
    completion = ALWAYS_EQUAL[name]
    assert run_python(old_program(sample, completion)).passed, "control: the answer no longer passes in-process"
    g = task.grade(sample, completion)
    assert g["correct"] is False and g["reason"].startswith(("failed: TypeError: the program returned a",
                                                             "failed: AssertionError"))


# ---- network ---------------------------------------------------------------------------------------------------
@pytest.fixture
def listeners():
    """A TCP and a UDP socket on the loopback address; ``seen()`` -> what reached them since the last call."""
    tcp, udp = socket.socket(), socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    udp.bind(("127.0.0.1", 0))

    def seen() -> list:
        got = []
        while select.select([tcp, udp], [], [], 0.2)[0]:
            if select.select([tcp], [], [], 0)[0]:
                conn, _ = tcp.accept()
                conn.settimeout(1)
                got.append(("tcp", conn.recv(100)))
                conn.close()
            if select.select([udp], [], [], 0)[0]:
                got.append(("udp", udp.recv(100)))
        return got

    yield tcp.getsockname()[1], udp.getsockname()[1], seen
    tcp.close()
    udp.close()


CTYPES_SOCKET = ("    import ctypes, os, struct\n    libc = ctypes.CDLL(None, use_errno=True)\n"
                 "    addr = struct.pack('=H', 2) + struct.pack('>H', {port}) + bytes([127, 0, 0, 1]) + bytes(8)\n"
                 "    fd = libc.socket(2, {kind}, 0)\n")
NETWORK = {
    "python tcp": "    import socket\n    socket.create_connection(('127.0.0.1', {tcp}), timeout=2).sendall(b'leak')\n" + RIGHT,
    "python udp": "    import socket\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leak', ('127.0.0.1', {udp}))\n"
                  + RIGHT,
    "ctypes tcp": CTYPES_SOCKET.format(port="{tcp}", kind=1) + "    if libc.connect(fd, addr, 16) != 0:\n"
                  "        raise OSError(ctypes.get_errno(), 'connect: ' + os.strerror(ctypes.get_errno()))\n"
                  "    libc.send(fd, b'leak', 4, 0)\n" + RIGHT,
    "ctypes udp": CTYPES_SOCKET.format(port="{udp}", kind=2) + "    if libc.sendto(fd, b'leak', 4, 0, addr, 16) != 4:\n"
                  "        raise OSError(ctypes.get_errno(), 'sendto: ' + os.strerror(ctypes.get_errno()))\n" + RIGHT,
}


@pytest.mark.parametrize("name", sorted(NETWORK))
def test_no_packet_reaches_a_listener_on_the_loopback(task, sample, listeners, name):
    tcp, udp, seen = listeners
    if NO_NET and name.startswith("ctypes"):
        pytest.skip("no network namespace on this machine (the grader warns)")
    completion = NETWORK[name].format(tcp=tcp, udp=udp)
    g = task.grade(sample, completion)
    assert g["correct"] is False and g["reason"].startswith(("failed: PermissionError: sandbox: network",
                                                             "failed: OSError: [Errno 101]"))
    assert seen() == []
    if IS_ROOT:   # control: without the namespace and the guard the same completion reaches the listener
        solution, _ = build_solution(sample, completion)
        run_checked(solution, build_tests(sample), prelude=sample["prompt"], from_program=[sample["entry_point"]],
                    limits=Limits(namespaces=False, guard=False))
        assert {what for what, _ in seen()} == {name.split()[1]}


# ---- files left behind -----------------------------------------------------------------------------------------
def writer(tag: str) -> str:
    """A completion that writes a file into each world-writable folder through libc (past the Python guard), then
    answers right."""
    return ("    import ctypes\n    libc = ctypes.CDLL(None, use_errno=True)\n"
            f"    for d in {PRIVATE!r}:\n"
            f"        fd = libc.open((d + '/tspd-leftover-{tag}').encode(), 0o101, 0o644)\n"
            "        assert fd >= 0, ctypes.get_errno()\n        libc.write(fd, b'x', 1)\n        libc.close(fd)\n" + RIGHT)


@pytest.mark.parametrize("namespaces", [True, False], ids=["private-mounts", "sweep-by-uid"])
def test_files_written_through_ctypes_do_not_outlive_the_run(task, sample, namespaces):
    if not namespaces and not IS_ROOT:
        pytest.skip("the sweep needs the per-run uid (root)")
    tag = secrets.token_hex(6)
    g = get_task("humaneval", limits=Limits(namespaces=namespaces)).grade(sample, writer(tag))
    assert g["correct"] is False and g["reason"] == "failed: wrote 3 files outside its directory"
    assert g["files_removed"] == 3
    assert [d for d in PRIVATE if os.path.exists(f"{d}/tspd-leftover-{tag}")] == []


@pytest.mark.skipif(not IS_ROOT, reason="the sandbox uid exists only when the evaluator is root")
def test_no_file_of_the_sandbox_uid_remains_anywhere_writable():
    program = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
               "for d in ('/tmp', '/var/tmp', '/dev/shm', '/run/lock'):\n"
               "    libc.mkdir((d + '/tspd-dir').encode(), 0o700)\n"
               "    libc.close(libc.open((d + '/tspd-dir/f').encode(), 0o101, 0o600))\n")
    r = run_python(program)
    assert r.files_removed >= 6 and r.reason == f"failed: wrote {r.files_removed} files outside its directory"
    left = [e.path for d in PRIVATE + ("/run/lock",) for e in os.scandir(d) if e.stat(follow_symlinks=False).st_uid == r.uid]
    assert left == []


# ---- the command a reviewer runs ---------------------------------------------------------------------------------
@pytest.mark.skipif(NO_NET, reason="no network namespace on this machine (the grader warns)")
def test_the_grade_command_fails_every_hostile_row(tmp_path, listeners, capsys):
    tcp, udp, seen = listeners
    tag = secrets.token_hex(6)
    hostile = [FORGED_SENTINEL["atexit"], FORGED_SENTINEL["frames"], ALWAYS_EQUAL["object"],
               NETWORK["ctypes tcp"].format(tcp=tcp, udp=udp), NETWORK["ctypes udp"].format(tcp=tcp, udp=udp), writer(tag)]
    rows = [{"id": "HumanEval/0", "completion": c} for c in hostile]
    (tmp_path / "hostile.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli(["grade", "--task", "humaneval", "--completions", str(tmp_path / "hostile.jsonl"),
                "--out", str(tmp_path / "graded.jsonl")]) == 0
    graded = [json.loads(line) for line in (tmp_path / "graded.jsonl").read_text().splitlines()]
    assert [r["correct"] for r in graded] == [False] * len(hostile) and all(r["reason"] for r in graded)
    assert json.loads(capsys.readouterr().err.strip().splitlines()[-1])["files_removed"] == 3   # the writer's
    assert seen() == []
    assert [d for d in PRIVATE if os.path.exists(f"{d}/tspd-leftover-{tag}")] == []
