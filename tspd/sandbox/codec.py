"""The values that cross between a sandboxed program and its tests, and the messages that carry them.

Why a wire format of its own: the tests run in another process than the program (:mod:`.check`) and call the
program's functions across a pipe (:mod:`.serve`). Whatever the program sends is bytes it chose, so the side
that runs the tests turns those bytes into exact builtin values and nothing else: then ``==`` in a test is
Python's own comparison of two plain values, and an object whose ``__eq__`` always answers True, a ``str``
subclass that lies, or code (no pickle crosses) cannot reach the assertion.

A value is JSON: ``null``, ``true``/``false``, an integer of at most 19 digits, a string (ASCII escapes, so
lone surrogates round-trip), a list (a JSON array), or a one-key object naming any other type::

    {"i": "-0x1f"} int beyond 19 digits     {"f": "0x1.8p+1"} float (float.hex: nan, inf, -0.0 exact)
    {"c": [re, im]} complex (float.hex)      {"t": [..]} tuple    {"s": [..]} set    {"fs": [..]} frozenset
    {"d": [[k, v], ..]} dict, in order       {"b": base64} bytes  {"ba": base64} bytearray
    {"r": [start, stop, step]} range         {"dq": [..]} collections.deque
    {"dk": [..]} {"dv": [..]} {"di": [[k, v], ..]} the views keys(), values(), items()
    {"it": [..]} an iterator (a generator, map, zip, ...): its items, handed back as an iterator
    {"bi": "int"} a class of the builtins module (MBPP/533's tests pass ``int`` and ``str``)
    {"obj": [n, kind]} an object of the program that is not a value (a handle: passed back, never compared)

What the encoder normalises (it runs on the program's side, so this is convenience for honest programs, not a
defence): subclasses of int, float, str, tuple, list, dict, set become their base type (an ``IntEnum`` is its
int, a ``namedtuple`` a tuple, a ``Counter`` or ``OrderedDict`` a dict), iterators are materialised (at most
:data:`MAX_ITEMS` items). The decoder is the defence: it accepts exactly this grammar, bounded by
:data:`MAX_MESSAGE` bytes a message and the interpreter's recursion limit, and raises :class:`ChannelError`
on anything else.

A message is one JSON array on one line, its first item a verb (``call``, ``ok``, ``raise``, ...).
Stdlib only, Python 3.8 syntax: this file is also loaded by the sandboxed interpreter (:mod:`.boot`).
"""
from __future__ import annotations

import base64
import builtins
import collections
import json
import os
import re
import select
import time

MAX_MESSAGE = 16 << 20     # bytes of one message line
MAX_ITEMS = 1_000_000      # items taken from an iterator the program returns
MAX_DEPTH = 200            # nesting of a value the encoder writes
_READ_CHUNK = 1 << 16
_SHORT_INT = 10 ** 19      # integers below this travel as JSON numbers, larger ones as hex
_HEX_INT = re.compile(r"-?0x[0-9a-f]+\Z")
_HEX_FLOAT = re.compile(r"-?(0x[0-9a-f]+(\.[0-9a-f]*)?p[-+]?[0-9]+|inf|nan)\Z")


class ChannelError(Exception):
    """The other side sent something that is not a message of this format (or too much of it)."""


class Handle:
    """An object of the program that is not a value, as the tests see it: it can be passed back to the
    program (it travels as its number), but it is never equal to anything, neither true nor false, not
    hashable and has no length, so no assertion can rest on it."""
    __slots__ = ("number", "kind")

    def __init__(self, number: int, kind: str):
        self.number, self.kind = number, kind

    def _refuse(self, *args):
        raise TypeError(f"the program returned a {self.kind!r} object, not a plain value the tests can use "
                        "(only builtin values cross from the sandbox)")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __len__ = __iter__ = __contains__ = _refuse
    __hash__ = None

    def __repr__(self) -> str:
        return f"<{self.kind} object of the program>"


# --------------------------------------------------------------------------------------------
# Values -> JSON
# --------------------------------------------------------------------------------------------
def encode_value(value, handle=None, depth: int = 0):
    """``value`` as a JSON-able structure. ``handle(obj) -> int`` names objects that are not values (the
    program's side keeps them); without it such an object is a TypeError."""
    if depth > MAX_DEPTH:
        raise ValueError(f"a value nested more than {MAX_DEPTH} levels deep")
    if value is None or value is True or value is False:
        return value
    if isinstance(value, Handle):
        return {"obj": [value.number, value.kind]}
    down = depth + 1
    if isinstance(value, int):
        v = int.__int__(value)
        return v if -_SHORT_INT < v < _SHORT_INT else {"i": hex(v)}
    if isinstance(value, float):
        return {"f": float.hex(float.__float__(value))}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, complex):
        return {"c": [float.hex(value.real), float.hex(value.imag)]}
    if isinstance(value, (bytes, bytearray)):
        return {"ba" if isinstance(value, bytearray) else "b": base64.b64encode(value).decode("ascii")}
    if isinstance(value, range):
        return {"r": [value.start, value.stop, value.step]}
    for kind, tag in _VIEWS:
        if isinstance(value, kind):
            return {tag: [_pair(x, handle, down) if tag == "di" else encode_value(x, handle, down) for x in value]}
    if _is_builtin(value):
        return {"bi": value.__name__}
    container = _container_tag(value)
    if container is not None:
        tag, items = container
        if tag == "d":
            return {"d": [_pair(kv, handle, down) for kv in items]}
        out = [encode_value(x, handle, down) for x in items]
        return out if tag == "l" else {tag: out}
    if handle is None:
        raise TypeError(f"a {type(value).__name__} object is not a value that can cross")
    return {"obj": [handle(value), type(value).__name__]}


_VIEWS = ((type({}.keys()), "dk"), (type({}.values()), "dv"), (type({}.items()), "di"))


def _pair(kv, handle, depth):
    k, v = kv
    return [encode_value(k, handle, depth), encode_value(v, handle, depth)]


def _container_tag(value):
    """(tag, items) of a container value, or None. Iterators are read here, at most MAX_ITEMS items."""
    if isinstance(value, list):
        return "l", list.__iter__(value)
    if isinstance(value, tuple):
        return "t", tuple.__iter__(value)
    if isinstance(value, dict):
        return "d", dict.items(value)
    if isinstance(value, frozenset):
        return "fs", value
    if isinstance(value, set):
        return "s", value
    if isinstance(value, collections.deque):
        return "dq", value
    if _is_iterator(value):
        items = []
        for x in value:
            if len(items) >= MAX_ITEMS:
                raise ValueError(f"an iterator of more than {MAX_ITEMS} items")
            items.append(x)
        return "it", items
    return None


def _is_builtin(value) -> bool:
    """A class of the ``builtins`` module itself (``int``, ``str``, ``ValueError``); not its functions, so that
    neither side hands the other ``eval`` or ``open``."""
    try:
        return isinstance(value, type) and getattr(builtins, value.__name__, None) is value
    except Exception:
        return False


def _is_iterator(value) -> bool:
    try:
        return hasattr(type(value), "__next__") and iter(value) is value
    except Exception:
        return False


# --------------------------------------------------------------------------------------------
# JSON -> values (the defence: exact builtins only)
# --------------------------------------------------------------------------------------------
def _as_list(payload, tag):
    if type(payload) is not list:
        raise ChannelError(f"{tag!r} needs a list")
    return payload


def _as_str(payload, tag, pattern=None):
    if type(payload) is not str or len(payload) > 1 << 20 or (pattern and not pattern.match(payload)):
        raise ChannelError(f"bad {tag!r} payload")
    return payload


def _pairs(payload, tag):
    items = _as_list(payload, tag)
    if any(type(p) is not list or len(p) != 2 for p in items):
        raise ChannelError(f"{tag!r} needs [key, value] pairs")
    return items


def _range(payload):
    items = _as_list(payload, "r")
    if len(items) != 3 or any(type(x) is not int for x in items) or items[2] == 0:
        raise ChannelError("bad range")
    return range(*items)


def _bytes(payload, tag):
    try:
        return base64.b64decode(_as_str(payload, tag), validate=True)
    except ValueError as e:
        raise ChannelError(f"bad {tag!r} payload") from e


_BUILD = {
    "i": lambda p: int(_as_str(p, "i", _HEX_INT), 16),
    "f": lambda p: float.fromhex(_as_str(p, "f", _HEX_FLOAT)),
    "c": lambda p: _complex(p),
    "t": lambda p: tuple(_as_list(p, "t")),
    "s": lambda p: set(_as_list(p, "s")),
    "fs": lambda p: frozenset(_as_list(p, "fs")),
    "d": lambda p: dict(_pairs(p, "d")),
    "b": lambda p: _bytes(p, "b"),
    "ba": lambda p: bytearray(_bytes(p, "ba")),
    "r": _range,
    "dq": lambda p: collections.deque(_as_list(p, "dq")),
    "dk": lambda p: dict.fromkeys(_as_list(p, "dk")).keys(),
    "dv": lambda p: dict(enumerate(_as_list(p, "dv"))).values(),
    "di": lambda p: dict(_pairs(p, "di")).items(),
    "it": lambda p: iter(_as_list(p, "it")),
    "bi": lambda p: _builtin(p),
}


def _builtin(payload):
    value = getattr(builtins, _as_str(payload, "bi"), None)
    if not _is_builtin(value):
        raise ChannelError("not a builtin: %r" % (payload[:40],))
    return value


def _complex(payload):
    parts = _as_list(payload, "c")
    if len(parts) != 2:
        raise ChannelError("bad complex")
    return complex(*[float.fromhex(_as_str(x, "c", _HEX_FLOAT)) for x in parts])


_KIND = re.compile(r"[^\w.]")


def _handle(payload, objects):
    if type(payload) is not list or len(payload) != 2 or type(payload[0]) is not int or type(payload[1]) is not str:
        raise ChannelError("bad handle")
    if objects is not None:
        return objects(payload[0])
    return Handle(payload[0], _KIND.sub("?", payload[1])[:60])


def _reject_number(text):
    raise ChannelError(f"bare number {text[:20]!r}: floats travel as {{'f': hex}}")


def _short_int(text):
    if len(text.lstrip("-")) > 19:
        raise ChannelError("integers of more than 19 digits travel as {'i': hex}")
    return int(text)


def loads_message(line: bytes, objects=None) -> list:
    """One message line -> a list (verb first). ``objects(n)`` resolves handles (``{"obj": [n, kind]}``; it
    raises ChannelError for an unknown one); without it a handle becomes a :class:`Handle`."""
    def tagged(pairs):
        if len(pairs) != 1 or type(pairs[0][0]) is not str:
            raise ChannelError("a tagged value has exactly one key")
        tag, payload = pairs[0]
        if tag == "obj":
            return _handle(payload, objects)
        build = _BUILD.get(tag)
        if build is None:
            raise ChannelError(f"unknown tag {tag[:20]!r}")
        try:
            return build(payload)
        except (TypeError, ValueError, OverflowError) as e:   # unhashable keys, bad hex, ...
            raise ChannelError(f"bad {tag!r} value: {e}") from None

    try:
        message = json.loads(line, object_pairs_hook=tagged, parse_float=_reject_number,
                             parse_constant=_reject_number, parse_int=_short_int)
    except ChannelError:
        raise
    except (ValueError, RecursionError, MemoryError) as e:
        raise ChannelError(f"not a message: {type(e).__name__}") from None
    if type(message) is not list or not message or type(message[0]) is not str:
        raise ChannelError("a message is a list that starts with a verb")
    return message


def dumps_message(message: list, handle=None) -> bytes:
    """A message (verb first) as one line; its values are encoded with :func:`encode_value`."""
    verb, *rest = message
    return json.dumps([verb, *[encode_value(v, handle) for v in rest]], ensure_ascii=True,
                      separators=(",", ":")).encode("ascii") + b"\n"


# --------------------------------------------------------------------------------------------
# Framing over two pipe descriptors
# --------------------------------------------------------------------------------------------
class Channel:
    """Messages over a pair of pipe descriptors, one line each, read with an optional deadline
    (``time.monotonic()`` seconds) and at most :data:`MAX_MESSAGE` bytes a line."""

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd
        self._buffer = bytearray()
        self._scanned = 0   # bytes of the buffer known to hold no newline

    def send_line(self, line: bytes) -> bool:
        """Write a whole line; False when the other side has gone (EPIPE)."""
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(self.write_fd, view):]
        except OSError:
            return False
        return True

    def receive_line(self, deadline: float | None = None) -> bytes | None:
        """The next line (without its newline), or None at end of file. TimeoutError past ``deadline``;
        ChannelError when a line grows past MAX_MESSAGE."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                break
            self._scanned = len(self._buffer)
            if self._scanned > MAX_MESSAGE:
                raise ChannelError(f"a message of more than {MAX_MESSAGE} bytes")
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.read_fd], [], [], left)[0]:
                    raise TimeoutError("no answer before the deadline")
            chunk = os.read(self.read_fd, _READ_CHUNK)
            if not chunk:
                return None
            self._buffer += chunk
        if end > MAX_MESSAGE:
            raise ChannelError(f"a message of more than {MAX_MESSAGE} bytes")
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        self._scanned = 0
        return line
