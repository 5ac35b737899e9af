"""Every published number the project quotes, from one file (``tspd/reported.json``): the paper's tables, figures
and text numbers as transcribed from its tex (``tests/test_reported.py`` checks them against it), and under
``others`` the numbers of other papers and leaderboards (Fast-dLLM's Fig. 5, the d3LLM AUP leaderboard, what other
papers saw of LLaDA-8B's intermediate steps), each with its source. Nothing in it was measured here; every page and
target that shows one of them reads it through this module and labels it as theirs.
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path

FILE = Path(__file__).with_name("reported.json")


@lru_cache(maxsize=1)
def _numbers() -> dict:
    return json.loads(FILE.read_text())


def reported() -> dict:
    """The whole file (a deep copy: callers may change it)."""
    return copy.deepcopy(_numbers())


def others(key: str) -> dict:
    """``others[key]`` (a deep copy): ``llada_gsm8k_parallel``, ``d3llm_leaderboard`` or ``llada_dynamics``."""
    return copy.deepcopy(_numbers()["others"][key])


def paper_accuracy(table: str, controller: str | None = None, **setting) -> float:
    """The accuracy (%) of the one row of the paper's ``table`` whose setting has every given key and value and,
    where given, ``controller`` (the rows' ``"policy"``; a ValueError names the table and setting when none or
    several match)."""
    if controller is not None:
        setting["policy"] = controller   # the transcription's key for the decoding's controller
    rows = [r for r in _numbers()["rows"] if r["table"] == table
            and all(r["setting"].get(k) == v for k, v in setting.items())]
    if len(rows) != 1:
        raise ValueError(f"{len(rows)} rows of {table} match {setting}, expected one")
    return rows[0]["accuracy"]


__all__ = ["FILE", "reported", "others", "paper_accuracy"]
