"""Fixed held-out splits and an endless training stream for a task generated from a random draw.

A generated task (``arith``, ``chain``) draws problems from one function ``make_problem(rng)``. Which split
a problem belongs to is decided by a hash of its question text alone (5 % test, 5 % traces, 90 % train), so
no split can ever share a question with another, whatever is drawn. ``test`` and ``traces`` are fixed
lists from their own seeds; ``train`` is an endless stream drawn with repeats (a template with few
distinct questions must not run dry and vanish from a long run).
"""
from __future__ import annotations

import hashlib
import random
from functools import lru_cache
from typing import Callable, Iterator

_BUCKETS = 1000
_SPLIT_OF_BUCKET = (("test", 0, 50), ("traces", 50, 100))   # question hash mod 1000: 5 % test, 5 % traces


def split_of(question: str) -> str:
    """``train``, ``test`` or ``traces``, decided by a hash of the question text only."""
    bucket = int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big") % _BUCKETS
    for name, lo, hi in _SPLIT_OF_BUCKET:
        if lo <= bucket < hi:
            return name
    return "train"


class Splits:
    """The splits of the task called ``name`` whose problems ``make_problem(rng)`` draws."""

    def __init__(self, name: str, make_problem: Callable[[random.Random], dict], sizes: dict[str, int]):
        self.name, self.make_problem, self.sizes = name, make_problem, sizes
        self.fixed = lru_cache(maxsize=None)(self._fixed)

    def stream(self, split: str, seed: int | str, unique: bool = True) -> Iterator[dict]:
        """Problems of ``split`` only, in a fixed order for a seed; ``unique`` (the held-out lists) skips repeats."""
        rng = random.Random(f"{self.name}-{split}-{seed}")
        seen: set[str] = set()
        while True:
            p = self.make_problem(rng)
            if p["question"] in seen or split_of(p["question"]) != split:
                continue
            if unique:
                seen.add(p["question"])
            yield p

    def _fixed(self, split: str) -> tuple[dict, ...]:
        stream = self.stream(split, 0)
        return tuple({"id": f"{self.name}-{split}-{i:04d}", **next(stream)} for i in range(self.sizes[split]))

    def load(self, split: str, n: int | None = None) -> list[dict]:
        """The first ``n`` problems of a split (all of ``test``/``traces`` when ``n`` is None); ``train`` needs ``n``."""
        if split in self.sizes:
            problems = self.fixed(split)
            if n is not None and n > len(problems):
                raise ValueError(f"split {split!r} has {len(problems)} problems, asked for {n}")
            return [dict(p) for p in problems[:n]]
        if split == "train":
            if n is None:
                raise ValueError("the train split is an infinite stream: pass n or use iter_train()")
            it = self.train(0)
            return [next(it) for _ in range(n)]
        raise ValueError(f"unknown split {split!r}: expected train, test or traces")

    def train(self, seed: int | str = 0) -> Iterator[dict]:
        """Endless training problems, drawn with repeats; never a ``test`` or ``traces`` question."""
        for i, p in enumerate(self.stream("train", seed, unique=False)):
            yield {"id": f"{self.name}-train{seed}-{i:07d}", **p}

    def fingerprint(self) -> str:
        """Short hash of the test split's text: changes whenever the templates or the generator change."""
        h = hashlib.sha256()
        for p in self.fixed("test"):
            h.update((p["question"] + "\x00" + p["answer"] + "\x00").encode())
        return h.hexdigest()[:12]
