"""The program's side of a graded run: after the solution has run as ``__main__``, answer the tests' calls.

Why: the tests no longer run in the program's process (they did, with a printed sentinel as the sign that
they finished, and a program can read and print that sentinel: its source file, its frames, its code
objects, an ``atexit`` hook). Here the program only hands out values: the tests, in another process under
another uid (:mod:`.check`), ask for a name or call a function, and get back plain values
(:mod:`.codec`) or an exception's name and message. Whatever this process writes is data to the tests, so
nothing here needs to be trusted, and nothing here decides a verdict.

Requests and replies (one line each)::

    ["lookup", [names]]            -> ["kinds", {name: ("call",) | ("module",) | ("value", v) | ("object", h)}]
    ["call", name, [args], {kw}]   -> ["ok", value] | ["raise", exception name, message]

A value that is not plain (an instance of the solution's own class, say) goes out as a handle that the
tests can pass back but not compare. ``SystemExit`` is not caught: exiting ends the run as it would have.
Stdlib only, Python 3.8 syntax: loaded by the sandboxed interpreter (:mod:`.boot`).
"""
from __future__ import annotations

import types

_MESSAGE_CHARS = 200


class _Objects:
    """The program's objects that crossed as handles, by number."""

    def __init__(self, codec):
        self.items, self.codec = [], codec

    def number(self, obj) -> int:
        self.items.append(obj)
        return len(self.items) - 1

    def get(self, n: int):
        if not 0 <= n < len(self.items):
            raise self.codec.ChannelError("unknown handle %d" % n)
        return self.items[n]


def serve(namespace: dict, channel, codec) -> None:
    """Answer requests until the tests close the channel."""
    objects = _Objects(codec)
    while True:
        line = channel.receive_line()
        if line is None:
            return
        try:
            reply = _answer(codec.loads_message(line, objects.get), namespace)
        except codec.ChannelError as e:
            reply = ["raise", "ChannelError", str(e)[:_MESSAGE_CHARS]]
        try:
            out = codec.dumps_message(reply, objects.number)
        except Exception as e:    # a value that cannot be written (too deep, an endless iterator, ...)
            out = codec.dumps_message(["raise", type(e).__name__, _message(e)])
        if not channel.send_line(out):
            return


def _answer(request: list, namespace: dict) -> list:
    verb = request[0]
    if verb == "lookup":
        return ["kinds", {name: _kind(namespace[name]) for name in request[1] if name in namespace}]
    if verb == "call" and len(request) == 4:
        _, name, args, kwargs = request
        try:
            return ["ok", namespace[name](*args, **kwargs)]
        except Exception as e:
            return ["raise", type(e).__name__, _message(e)]
    return ["raise", "ChannelError", "unknown request %r" % (verb,)]


def _kind(value) -> tuple:
    if isinstance(value, types.ModuleType):
        return ("module",)
    if callable(value):
        return ("call",)
    return ("value", value)   # a plain value crosses as itself, anything else as a handle


def _message(e: BaseException) -> str:
    try:
        return str(e)[:_MESSAGE_CHARS]
    except Exception:
        return ""
