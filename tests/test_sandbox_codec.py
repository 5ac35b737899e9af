"""The channel between a sandboxed program and its tests (tspd.sandbox.codec, .serve, .check): builtin values
round-trip exactly, the decoder builds nothing else, and the tests' side judges on plain values only."""
from __future__ import annotations

import collections
import enum
import math
import os
import threading

import pytest

from tspd.sandbox import check, codec, serve
from tspd.sandbox.codec import ChannelError, Handle, dumps_message, loads_message


def round_trip(value):
    return loads_message(dumps_message(["ok", value]))[1]


@pytest.mark.parametrize("value", [
    0, -7, 2 ** 64 + 1, -(10 ** 40), 10 ** 19 - 1, 0.1, -0.0, float("inf"), 1e-310, 1.0, 1 + 2j, "", "naïve ✓",
    "\ud800 lone surrogate", True, False, None, [1, [2, "x"]], (1, (2.5, None)), {"a": 1, (1, 2): [3]},
    {1, 2, 3}, frozenset({"x"}), b"\x00\xff", bytearray(b"ab"), range(1, 10, 3), collections.deque([1, 2]),
    [[]], {}, (), set(), int, ValueError,
])
def test_builtin_values_round_trip_with_their_exact_type(value):
    back = round_trip(value)
    assert back == value and type(back) is type(value)
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)


def test_nan_views_and_iterators():
    assert math.isnan(round_trip(float("nan")))
    d = {"b": 2, "a": 1}
    assert list(round_trip(d)) == ["b", "a"]                       # order kept
    assert round_trip(d.keys()) == {"a", "b"} and list(round_trip(d.items())) == [("b", 2), ("a", 1)]
    assert list(round_trip(d.values())) == [2, 1]
    it = round_trip(x * x for x in range(4))
    assert iter(it) is it and list(it) == [0, 1, 4, 9]           # a generator comes back as an iterator
    assert list(round_trip(map(str, [1, 2]))) == ["1", "2"]


def test_subclasses_become_their_base_type():
    class Colour(enum.IntEnum):
        RED = 3

    class Liar(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    Point = collections.namedtuple("Point", "x y")
    assert type(round_trip(Colour.RED)) is int and round_trip(Colour.RED) == 3
    assert round_trip(Point(1, 2)) == (1, 2) and type(round_trip(Point(1, 2))) is tuple
    assert type(round_trip(collections.Counter("aab"))) is dict
    back = round_trip(Liar("x"))
    assert type(back) is str and back != "y"                      # the lie stays behind


def test_an_object_that_is_not_a_value_crosses_as_a_handle_that_refuses_everything():
    class Anything:
        def __eq__(self, other):
            return True

    with pytest.raises(TypeError, match="Anything"):
        dumps_message(["ok", Anything()])
    kept = []
    h = loads_message(dumps_message(["ok", Anything()], lambda obj: kept.append(obj) or len(kept) - 1))[1]
    assert isinstance(h, Handle) and h.number == 0 and h.kind == "Anything"
    for use in (lambda: h == 1, lambda: 1 == h, lambda: h != 2, lambda: bool(h), lambda: {h}, lambda: len(h)):
        with pytest.raises(TypeError):
            use()
    assert loads_message(dumps_message(["call", "f", [h], {}]), objects=lambda n: kept[n])[2] == [kept[0]]


@pytest.mark.parametrize("line", [
    b'["ok", 1.5]', b'["ok", NaN]', b'["ok", 12345678901234567890]', b'["ok", {"zz": 1}]', b'["ok", {"t": [], "s": []}]',
    b'["ok", {"d": [[[1], 2]]}]', b'["ok", {"f": "1.5"}]', b'["ok", {"i": "12"}]', b'["ok", {"r": [1, 2, 0]}]',
    b'{"ok": 1}', b'[]', b'[1]', b'not json', b'["ok", ' + b"[" * 100_000 + b"]" * 100_000 + b"]",
    b'["ok", {"obj": 3}]', b'["ok", {"b": "!!"}]', b'["ok", {"bi": "eval"}]', b'["ok", {"bi": "open"}]',
])
def test_anything_else_is_refused(line):
    with pytest.raises(ChannelError):
        loads_message(line)


def test_a_line_past_the_cap_is_refused(monkeypatch):
    monkeypatch.setattr(codec, "MAX_MESSAGE", 1000)
    r, w = os.pipe()
    try:
        os.write(w, b"x" * 5000)
        with pytest.raises(ChannelError, match="more than 1000 bytes"):
            codec.Channel(r, w).receive_line()
    finally:
        os.close(r)
        os.close(w)


# ---- the tests' side against the program's side, in this process (two threads, two pipes) -------------
def judge(namespace: dict, tests: str, prelude: str = "", from_program=()) -> dict:
    """check.judge against serve.serve in a thread that closes its ends when it stops, as a process would."""
    to_program, from_tests = os.pipe()
    to_tests, from_program_fd = os.pipe()

    def program_side():
        try:
            serve.serve(namespace, codec.Channel(to_program, from_program_fd), codec)
        except SystemExit:
            pass              # the program exits: its ends close below
        finally:
            os.close(to_program)
            os.close(from_program_fd)

    server = threading.Thread(target=program_side)
    server.start()
    try:
        program = check.Program(codec.Channel(to_tests, from_tests), codec)
        return check.judge({"prelude": prelude, "tests": tests, "from_program": list(from_program)}, program)
    finally:
        os.close(from_tests)     # the server sees the end of its requests and returns
        server.join()
        os.close(to_tests)


def test_the_tests_judge_plain_values():
    ns = {"double": lambda x: 2 * x}
    assert judge(ns, "assert double(2) == 4\nassert double('a') == 'aa'\n") == {"passed": True}
    failed = judge(ns, "assert double(2) == 5, 'two twice'\n")
    assert failed["failed"] == "AssertionError: two twice" and "double(2) == 5" in failed["traceback"]


def test_exceptions_of_the_program_arrive_by_name():
    def boom(x):
        raise ValueError("bad " + x)

    class MyError(Exception):
        pass

    def mine():
        raise MyError("custom")

    ns = {"boom": boom, "mine": mine}
    assert judge(ns, "boom('x')")["failed"] == "ValueError: bad x"
    assert judge(ns, "try:\n    boom('y')\nexcept ValueError:\n    pass\n") == {"passed": True}
    assert judge(ns, "mine()")["failed"] == "MyError: custom"


def test_the_program_cannot_redefine_a_builtin_the_tests_use_unless_it_is_the_function_under_test():
    ns = {"sorted": lambda *a: 1, "sum": lambda a, b: a * b, "f": lambda: [3, 1]}
    assert judge(ns, "assert sorted(f()) == [1, 3]") == {"passed": True}      # the real sorted
    assert judge(ns, "assert sum(2, 3) == 6", from_program=["sum"]) == {"passed": True}


def test_the_prelude_gives_helpers_and_the_program_gives_the_entry_point():
    prelude = "def helper(x):\n    return x + 1\n\ndef entry(x):\n    '''the stub'''\n"
    ns = {"entry": lambda x: x + 1, "helper": lambda x: 0}
    tests = "def check(candidate):\n    assert candidate(1) == helper(1) == 2\n\ncheck(entry)\n"
    assert judge(ns, tests, prelude, ["entry"]) == {"passed": True}
    assert judge(ns, tests, prelude)["failed"].startswith("AssertionError")     # without it: the stub


def test_objects_of_the_program_can_be_passed_back_but_not_compared():
    class Node:
        def __init__(self, v):
            self.v = v

    ns = {"Node": Node, "root": Node(5), "value": lambda n: n.v, "ident": lambda n: n}
    assert judge(ns, "assert value(root) == 5\nassert value(Node(7)) == 7\n") == {"passed": True}
    assert judge(ns, "assert ident(root) == root")["failed"].startswith("TypeError: the program returned a 'Node'")


def test_free_names():
    assert check.free_names("import math\nx = 1\nassert f(x, math.pi, len(y))\nfor i in z: pass") == {"f", "y", "z"}


def test_a_test_that_swallows_exceptions_cannot_carry_on_without_the_program():
    def leave():
        raise SystemExit(0)   # not caught by the server: the program's side ends

    tests = "for _ in range(3):\n    try:\n        leave()\n    except:\n        pass\n"
    assert judge({"leave": leave}, tests) == {"lost": check.LOST}
