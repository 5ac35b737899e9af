"""The first code of every sandboxed interpreter (``python -I -B boot.py CONFIG``), in this order:

1. read its input from stdin (then ``/dev/null``): the sibling modules it needs, compiled once by the
   grader (:func:`.process.code_bundle`; from source when the interpreter's bytecode differs), and the
   tests' spec for the ``tests`` role; load the modules before any privilege is dropped (a fresh uid may
   not be able to read this package);
2. raise the kernel's walls while still privileged (:func:`.isolate.enter`), tell the grader what held on
   the status pipe and wait for its go (it pins the private ``/tmp`` mounts first, to count what the
   program leaves there);
3. become the sandbox uid for good (:func:`.isolate.drop`), set the resource limits, install the Python
   guard (:mod:`.guard`);
4. run the role: ``program`` runs ``program.py`` as ``__main__`` (:func:`tspd.eval.sandbox.run_python`);
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
    """The grader's input (``{"magic", "code", "spec"}``); stdin is ``/dev/null`` afterwards."""
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


def _handshake(cfg: dict, status: dict) -> None:
    """Report ``status`` on the status pipe, then block until the grader's go byte (or exit without one)."""
    os.write(cfg["status_fd"], (json.dumps(status) + "\n").encode())
    os.close(cfg["status_fd"])
    go = os.read(cfg["go_fd"], 1)
    os.close(cfg["go_fd"])
    if go != b"g":
        os._exit(70)


def main(argv) -> None:
    cfg, given = json.loads(argv[1]), _read_input()
    compiled = _compiled(given)
    isolate, guard = _sibling("isolate", compiled), _sibling("guard", compiled)
    role = cfg["role"]
    codec = _sibling("codec", compiled) if role in ("serve", "tests") else None
    worker = _sibling({"serve": "serve", "tests": "check"}[role], compiled) if codec else None
    status = isolate.enter(os.getcwd(), cfg["hide"]) if cfg["namespaces"] else {"why": ["namespaces off"]}
    if cfg.get("status_fd") is not None:
        _handshake(cfg, status)
    isolate.drop(cfg["uid"], dumpable=not (role == "tests" and cfg["uid"] is None))
    for name, soft, hard in cfg["rlimits"]:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if cfg["guard"]:
        guard.install_guard(os.getcwd())
    del isolate, guard, status, compiled
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
