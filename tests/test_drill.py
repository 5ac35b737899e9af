"""Drills: chain's solution lines without their question, a training mixture (tspd.tasks.drill)."""
from __future__ import annotations

import random

import pytest

from tspd.tasks import chain, drill
from tspd.training.lm.config import LMTrainConfig


def test_a_drill_is_consecutive_lines_of_its_solution_without_the_final_line():
    for p in chain.load_split("test", 50):
        d = drill.drill(p, random.Random(p["id"]))
        lines = p["answer"].split("\n")[:-1]
        got = d["answer"].split("\n")
        start = lines.index(got[0])
        assert got == lines[start:start + len(got)] and "####" not in d["answer"]
        assert d["question"] == drill.QUESTION and len(d["answer"]) <= drill.MAX_CHARS


def test_drills_fill_what_fits_and_start_anywhere():
    p = {"id": "x", "template": "t", "answer": "\n".join(f"Line {k}: 02*03 = 06" for k in range(9)) + "\n#### 6"}
    starts = {drill.drill(p, random.Random(s))["answer"].split("\n")[0] for s in range(40)}
    assert len(starts) > 4
    first = drill.drill(p, random.Random(0))["answer"]
    assert len(first) + len("\nLine 8: 02*03 = 06") > drill.MAX_CHARS or first.endswith("Line 8: 02*03 = 06")


def test_drill_splits_are_chains_and_training_never_draws_a_held_out_solution():
    held_out = [p["answer"] for p in chain.load_split("test")]
    it = drill.iter_train(0)
    for _ in range(300):
        d = next(it)
        assert not any(d["answer"] in a for a in held_out if len(d["answer"]) > 60)
    assert [p["answer"] for p in drill.load_split("test", 5)] == [p["answer"] for p in drill.load_split("test", 5)]


def test_drill_is_a_mixture_only():
    with pytest.raises(ValueError, match="training mixture only"):
        LMTrainConfig(out="", task="drill")
    from tspd.training.lm.config import mixes
    assert mixes(LMTrainConfig(out="", task="chain", mix_tasks="drill:0.5")) == [("drill", 0.5)]
