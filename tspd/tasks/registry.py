"""The task registry: ``get_task(name)`` for gsm8k, math, math500, humaneval, mbpp, arith, chain, roster, styled, leaning, trail, shell and leaning_shell.

Every task has ``samples(limit)``, ``prompt(sample, tokenizer, chat)``, ``stop_strings(chat)``,
``postprocess(text, chat)``, ``reference_completion(sample)`` and ``grade(sample, completion)``;
see :class:`tspd.tasks.base.Task`.
"""
from __future__ import annotations

from pathlib import Path

from tspd.tasks.arith import Arith
from tspd.tasks.chain import Chain
from tspd.tasks.base import Task, cut_at_stop, render_prompt, use_chat
from tspd.tasks.competition_math import MATH, MATH500
from tspd.tasks.data import ENV_VAR, TaskDataError, default_data_dir
from tspd.tasks.gsm8k import GSM8K
from tspd.tasks.humaneval import HumanEval
from tspd.tasks.mbpp import MBPP
from tspd.tasks.roster import Roster
from tspd.tasks.leaning import Leaning
from tspd.tasks.styled import Styled
from tspd.tasks.trail import Trail
from tspd.tasks.shell import Shell
from tspd.tasks.leaning_shell import LeaningShell

TASKS: dict[str, type[Task]] = {t.name: t for t in (GSM8K, MATH, MATH500, HumanEval, MBPP, Arith, Chain, Roster, Styled,
                                                                     Leaning, Trail, Shell, LeaningShell)}

__all__ = ["TASKS", "ENV_VAR", "Task", "TaskDataError", "cut_at_stop", "default_data_dir", "get_task",
           "render_prompt", "use_chat"]


def get_task(name: str, data_dir: str | Path | None = None, split: str = "test", source: str | None = None,
             **options) -> Task:
    """A task by name. ``data_dir`` overrides the default data directory; ``source`` reads a
    ``datasets`` hub id instead of local files; ``options`` go to the task (e.g. sandbox ``limits``)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r} (known: {', '.join(TASKS)})")
    return TASKS[name](data_dir=data_dir, split=split, source=source, **options)
