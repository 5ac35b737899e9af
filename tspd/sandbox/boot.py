"""The first code of every sandboxed interpreter (``python -I -B boot.py CONFIG``), in this order:

1. read its input from stdin (then ``/dev/null``): the sibling modules it needs, compiled once by the
   grader (:func:`.process.code_bundle`; from source when the interpreter's bytecode differs), the
   allowlist of what the interpreter needs (:mod:`.allowlist`), and the tests' spec for the ``tests`` role;
   load the modules before any privilege is dropped (a fresh uid may not be able to read this package);
2. raise the kernel's walls while still privileged (:func:`.isolate.enter`). With a PID namespace, this
   process stays outside it and forks its PID 1 (:mod:`.reaper`), which builds the file system the program
   sees (:func:`.root.view`) and reports; without one, this process builds it. Then tell the grader what
   held on the status pipe and wait for its go (it pins the private ``/tmp`` mounts first, to count what the
   program leaves there); with a PID namespace this process then only relays how the run ended, and PID 1
   starts the role's process, which goes on here;
3. become the sandbox uid for good (:func:`.isolate.drop`), set the resource limits, install the Python
   guard (:mod:`.guard`);
4. run the role: ``program`` runs ``program.py`` as ``__main__`` (:func:`tspd.sandbox.run_python`);
   ``serve`` runs ``solution.py`` as ``__main__`` and then answers calls from the tests (:mod:`.serve`);
   ``tests`` runs the tests against those answers and writes the verdict (:mod:`.check`).

Nothing the program can influence runs before step 4, so what the status pipe says is the boot's own word.
CONFIG is JSON: role, uid, rlimits, guard, namespaces, hide, and the descriptor numbers of the role's pipes.
Stdlib only, Python 3.8 syntax.
"""
import base64
import importlib.util
import json
import marshal
import os
import resource
import runpy
import sys
import types

_HERE = os.path.dirname(os.path.abspath(__file__))


def _read_input() -> dict:
    """The grader's input (``{"magic", "code", "allow", "spec"}``); stdin is ``/dev/null`` afterwards."""
    data = sys.stdin.buffer.read()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return json.loads(data) if data else {}


def _compiled(given: dict) -> dict:
    """name -> code object of the grader's bundle; {} when it was made by another bytecode version."""
    if given.get("magic") == importlib.util.MAGIC_NUMBER.hex() and given.get("code"):
        return marshal.loads(base64.b64decode(given["code"]))
    return {}


def _sibling(name: str, compiled: dict):
    """The module ``name`` of this package: its code from the grader's bundle, else compiled from source."""
    path = os.path.join(_HERE, name + ".py")
    module = types.ModuleType("tspd_sandbox_" + name)
    module.__file__ = path
    code = compiled.get(name)
    if code is None:
        with open(path, encoding="utf-8") as f:
            code = compile(f.read(), path, "exec")
    exec(code, module.__dict__)
    return module


_ROLE_FDS = ("request_fd", "reply_fd", "verdict_fd")


def _handshake(cfg: dict, status: dict) -> None:
    """Report ``status`` on the status pipe, then block until the grader's go byte (or exit without one); a role
    the grader does not hold back (the tests) has no go pipe and goes on at once."""
    if cfg.get("status_fd") is None:
        return
    os.write(cfg["status_fd"], (json.dumps(status) + "\n").encode())
    os.close(cfg["status_fd"])
    if cfg.get("go_fd") is None:
        return
    go = os.read(cfg["go_fd"], 1)
    os.close(cfg["go_fd"])
    if go != b"g":
        os._exit(70)


def _walls(cfg: dict, given: dict, isolate, root, reaper) -> None:
    """Step 2 (see the module docstring); returns in the process that runs the role."""
    status = isolate.enter()

    def view() -> None:
        root.view(isolate, given.get("allow"), os.getcwd(), cfg["hide"], cfg["uid"], status)

    if not status["pid"]:
        view()
        _handshake(cfg, status)
        return
    role_fds = [cfg[k] for k in _ROLE_FDS if k in cfg]
    link = reaper.Link()
    if link.outer:   # outside the PID namespace: PID 1's report to the grader, then relay the end (no return)
        status = link.receive() or {**status, "why": status["why"] + ["PID 1 ended before it reported"]}
        _handshake(cfg, status)
        isolate.drop(None, dumpable=False)
        link.go_and_relay(role_fds)
    for key in ("status_fd", "go_fd"):   # PID 1: build the view, report, wait, start the role's process
        if cfg.get(key) is not None:
            os.close(cfg[key])
    view()
    link.report(status)
    link.wait_go()
    link.reap(role_fds, lambda: isolate.drop(None, dumpable=False))


def main(argv) -> None:
    cfg, given = json.loads(argv[1]), _read_input()
    compiled = _compiled(given)
    isolate, guard = _sibling("isolate", compiled), _sibling("guard", compiled)
    role = cfg["role"]
    codec = _sibling("codec", compiled) if role in ("serve", "tests") else None
    worker = _sibling({"serve": "serve", "tests": "check"}[role], compiled) if codec else None
    if cfg["namespaces"]:
        _walls(cfg, given, isolate, _sibling("root", compiled), _sibling("reaper", compiled))
    else:
        _handshake(cfg, {"why": ["namespaces off"]})
    isolate.drop(cfg["uid"], dumpable=not (role == "tests" and cfg["uid"] is None))
    for name, soft, hard in cfg["rlimits"]:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if cfg["guard"]:
        guard.install_guard(os.getcwd())
    del isolate, guard, compiled
    if role == "program":
        sys.argv = ["program.py"]
        runpy.run_path("program.py", run_name="__main__")
    elif role == "serve":
        sys.argv = ["solution.py"]
        namespace = runpy.run_path("solution.py", run_name="__main__")
        worker.serve(namespace, codec.Channel(cfg["request_fd"], cfg["reply_fd"]), codec)
    else:
        worker.tests_role(cfg, given["spec"], codec)


if __name__ == "__main__":
    main(sys.argv)
