"""The tests' side of a graded run: the data set's tests, run in their own sandboxed process, calling the
program through a channel (:mod:`.serve`), and the verdict, written where only the grader reads it.

Why this makes a pass unforgeable: the verdict is written by this process, which runs only the data set's
code and ours, under a uid other than the program's (it cannot read this process's memory, files or
pipes, or signal it). The program's only influence is the values it returns, and they arrive as plain
builtin values (:mod:`.codec`), so every comparison in the tests is Python's own on two plain values. A
printed line, an exit status, an ``atexit`` hook or an object with a lying ``__eq__`` decides nothing.

The namespace the tests see, in order:

1. the *prelude* (trusted text: HumanEval's prompt, so helpers such as ``poly`` or ``encode_cyclic`` that
   the tests call are the data set's own, never the completion's);
2. from the program, each name the tests use but do not define and that is not a builtin (so a
   program cannot redefine ``sorted`` or ``set`` for the tests), plus the names the grader says are the
   program's (the entry point, which overrides the prelude's stub; MBPP/126's function is called ``sum``):
   functions and classes become proxies that call across the channel, modules are imported
   here by the same name from the standard library (``math.isclose``), plain values are copied and other
   objects (MBPP's ``test_setup_code`` builds trees of the solution's ``Node``) become handles.

Verdict (one JSON line on the verdict pipe): ``{"passed": true}``; ``{"failed": "Name: message",
"traceback": ...}`` when a test raised (an exception of the program arrives as its name and message: a
builtin exception class is raised as itself, so ``except ValueError`` in a test still works);
``{"lost": ...}`` when the program ended or broke the channel (the grader reads the program's exit to say
why). The process then exits 0 after a pass and 1 otherwise, and a pass needs both: an exit status is the
one thing a process of the evaluator's uid (the program, where there is no uid isolation) cannot write for
an undumpable process of that uid, while it might reach the grader's end of the verdict pipe. Stdlib only, Python 3.8 syntax: loaded by the sandboxed interpreter (:mod:`.boot`).
"""
from __future__ import annotations

import ast
import builtins
import importlib
import json
import linecache
import os
import sys
import traceback

_MESSAGE_CHARS = 200
LOST = "the program ended"   # the verdict's "lost" when the program's side of the channel closed


class ProgramLost(BaseException):
    """The program's process ended, or wrote something that is not an answer, while the tests waited. Not an
    ``Exception``, so that a test's ``except Exception`` cannot carry on without the program."""


class ProgramError(Exception):
    """An exception raised by the program whose class is not a builtin one (its name is kept)."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def names_read_and_bound(source: str) -> tuple[set, set]:
    """(names the code reads, names it binds anywhere: assignments, definitions, arguments, imports)."""
    read, bound = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read, bound


def free_names(source: str) -> set:
    """Names the code reads but never binds, builtins excluded: what must come from elsewhere."""
    read, bound = names_read_and_bound(source)
    return read - bound - set(dir(builtins))


class Program:
    """The program at the other end of the channel."""

    def __init__(self, channel, codec):
        self.channel, self.codec = channel, codec
        self.lost: str | None = None   # once lost, lost for good (even if a bare ``except:`` in a test caught it)

    def ask(self, *message):
        if self.lost is None:
            if not self.channel.send_line(self.codec.dumps_message(list(message))):
                self.lost = LOST
            else:
                try:
                    line = self.channel.receive_line()
                    if line is None:
                        self.lost = LOST
                    else:
                        return self.codec.loads_message(line)
                except self.codec.ChannelError as e:
                    self.lost = "the program broke the channel: %s" % e
        raise ProgramLost(self.lost)

    def call(self, name, args, kwargs):
        reply = self.ask("call", name, list(args), dict(kwargs))
        if reply[0] == "ok" and len(reply) == 2:
            return reply[1]
        if reply[0] == "raise" and len(reply) == 3 and all(type(x) is str for x in reply[1:]):
            raise _exception(reply[1], reply[2])
        self.lost = "the program broke the channel: a reply %r" % (reply[0],)
        raise ProgramLost(self.lost)

    def proxy(self, name):
        def call_program(*args, **kwargs):
            return self.call(name, args, kwargs)
        call_program.__name__ = call_program.__qualname__ = name
        return call_program


def _exception(name: str, message: str) -> BaseException:
    name, message = name[:60], message[:_MESSAGE_CHARS]
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(message)
        except Exception:
            pass
    return ProgramError(name, message)


def bind(program: Program, namespace: dict, names) -> None:
    """Fill ``namespace`` with what the program says each of ``names`` is (see the module docstring)."""
    reply = program.ask("lookup", sorted(names))
    kinds = reply[1] if reply[0] == "kinds" and len(reply) == 2 and type(reply[1]) is dict else None
    if kinds is None:
        program.lost = "the program broke the channel: no names"
        raise ProgramLost(program.lost)
    for name in set(names) - set(kinds):
        namespace.pop(name, None)   # not the program's: a NameError, never the prelude's stub
    for name, kind in kinds.items():
        if name not in names or type(kind) is not tuple or not kind:
            namespace.pop(name, None)
            continue
        if kind[0] == "call":
            namespace[name] = program.proxy(name)
        elif kind[0] == "module" and name in getattr(sys, "stdlib_module_names", ()):
            namespace[name] = importlib.import_module(name)
        elif kind[0] == "value" and len(kind) == 2:
            namespace[name] = kind[1]


def judge(spec: dict, program: Program) -> dict:
    """Run the spec's prelude and tests against ``program``. -> the verdict (see the module docstring)."""
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(_prelude(spec["prelude"]), namespace)
        wanted = (free_names(spec["tests"]) - set(namespace)) | set(spec["from_program"])
        bind(program, namespace, wanted)
        exec(_compiled(spec["tests"], "tests.py"), namespace)
    except ProgramLost:
        pass
    except Exception as e:    # a test failed: an assertion, or an exception of the program or of the tests
        if program.lost is None:
            name = e.name if isinstance(e, ProgramError) else type(e).__name__
            text = str(e).strip()[:_MESSAGE_CHARS]
            return {"failed": "%s: %s" % (name, text) if text else name,
                    "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:]}
    return {"lost": program.lost} if program.lost is not None else {"passed": True}


def _prelude(source: str):
    """The prelude compiled; a prompt that ends in a bare signature (its body is the completion) gets a
    ``pass`` body, and one that still does not compile is left out (its helpers are then missing)."""
    for text in (source, source.rstrip("\n") + "\n    pass\n"):
        try:
            return _compiled(text, "prelude.py")
        except SyntaxError:
            continue
    return _compiled("", "prelude.py")


def _compiled(source: str, name: str):
    """Compiled code whose traceback lines show the source (the stderr of a failed row names the test)."""
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    return compile(source, name, "exec")


def tests_role(cfg: dict, spec: dict, codec) -> None:
    """The ``tests`` role of :mod:`.boot`: judge ``spec`` (prelude, tests, from_program), write the verdict,
    leave."""
    result = judge(spec, Program(codec.Channel(cfg["reply_fd"], cfg["request_fd"]), codec))
    os.write(cfg["verdict_fd"], (json.dumps(result) + "\n").encode())
    os._exit(0 if result.get("passed") is True else 1)   # the grader also needs exit 0 for a pass
