"""Other papers' published speed-accuracy points, kept as theirs: the anchors the Pareto page shows.

:data:`LEADERBOARD` holds the d3LLM AUP leaderboard's (TPF, accuracy) points (``tspd/reported.json``, :mod:`tspd.theirs`) for LLaDA-8B-Instruct on
GSM8K (hao-ai-lab, d3LLM, ``AUP_leaderboard``; blog "Who is the Most Parallel Parallel-Decoder?").
Nothing here was measured by this project, and every label says whose the numbers are (:func:`label`).
Their AUP is computed by :func:`tspd.eval.aup.aups` from their points, with the best accuracy among
them as ``y_max``.
"""
from __future__ import annotations

import copy

from tspd import theirs
from tspd.eval.aup import aups

_BOARDS = theirs.others("d3llm_leaderboard")
SOURCE = _BOARDS["source"]
LEADERBOARD = [   # their (TPF, accuracy %) points, per method (tspd/reported.json)
    {**b, "methods": {m: [tuple(p) for p in points] for m, points in b["methods"].items()}} for b in _BOARDS["boards"]]


def board(model: str = "LLaDA-8B-Instruct", task: str = "gsm8k") -> dict:
    """One board (``model``, ``task``, ``setting``, ``methods``: name -> [(TPF, accuracy %)]), a deep copy."""
    for b in LEADERBOARD:
        if b["model"] == model and b["task"] == task:
            return copy.deepcopy(b)
    raise KeyError(f"no leaderboard points for {model} on {task}")


def label(b: dict) -> str:
    """``d3LLM leaderboard's numbers (LLaDA-8B-Instruct, GSM8K, CoT, 256 tokens)``."""
    return f"d3LLM leaderboard's numbers ({b['model']}, {b['setting']})"


def board_aups(b: dict) -> dict[str, float]:
    """AUP of each method of a board, from its own points (``y_max``: the best of them)."""
    return aups(b["methods"])


__all__ = ["SOURCE", "LEADERBOARD", "board", "label", "board_aups"]
