"""The tasks this repository generates itself, by name: what ``train-lm --task`` trains an embedded model on.

Each is a module with the same functions: ``load_split``, ``iter_train``, ``prompt``, ``fingerprint``,
``extract_answer``, ``right`` (the grade), ``line_accuracy``, ``template_accuracy``, ``GEN_LENGTH`` /
``BLOCK_LENGTH`` (the window it is sized for), ``SPLIT_SIZES`` and ``SUMMARY`` (what it is, in a phrase);
``arith`` also ``altered`` and ``reordered`` (``chain`` draws its freedom in every problem instead). A
checkpoint names its task's module in ``config.json``. ``drill`` has only what a training mixture needs
(``iter_train``, ``load_split``, ``GEN_LENGTH``): it has nothing to grade.
"""
from __future__ import annotations

from types import ModuleType
from typing import Callable

from tspd.tasks import arith, chain, drill, leaning, leaning_shell, roster, shell, styled, trail

GENERATED: dict[str, ModuleType] = {"arith": arith, "chain": chain, "drill": drill, "roster": roster,
                                 "styled": styled, "leaning": leaning, "trail": trail, "shell": shell,
                                 "leaning_shell": leaning_shell}
MIX_ONLY = {"drill"}   # shares of another task's batches (--mix-tasks), never a --task of their own


def generated_task(name: str) -> ModuleType:
    """The task module called ``name`` (``arith``, ``chain``, or a checkpoint's ``tspd.tasks.chain``)."""
    key = name.rsplit(".", 1)[-1]
    if key not in GENERATED:
        raise ValueError(f"unknown generated task {name!r} (known: {', '.join(GENERATED)})")
    return GENERATED[key]


def trained_task(model) -> ModuleType:
    """The task module a ``train-lm`` checkpoint (a zoo name, a directory, an opened or loaded model) was
    trained on, as its ``config.json`` names it; a one-line ValueError for a checkpoint trained on none."""
    from tspd.models.loading import checkpoint_task
    name = checkpoint_task(model)
    if name is None:
        raise ValueError(f"{model} names no generated task in its config.json (tspd_task): it was not trained "
                         "by `python -m tspd train-lm`")
    return generated_task(name)


def whole_answer_key(task: str | ModuleType) -> Callable[[str | None], str] | None:
    """What "the same answer" compares for ``task`` (a name or a module) where its grade reads the whole answer:
    its ``answer_key`` (roster: the plan, spaces normalised); None where the extracted final answer is what the
    grade reads (arith, chain, the benchmarks)."""
    module = task if isinstance(task, ModuleType) else GENERATED.get(str(task).rsplit(".", 1)[-1])
    return getattr(module, "answer_key", None)


def row_answer(task: str | ModuleType) -> Callable[[dict], str | None]:
    """The answer of a stored results row as "the same answer" compares it for ``task``: the whole answer's key
    of its ``output`` where the grade reads the whole answer (:func:`whole_answer_key`), else its ``extracted``
    final answer (two roster plans with the same day count are not the same answer)."""
    key = whole_answer_key(task)
    return (lambda row: key(row.get("output"))) if key else (lambda row: row.get("extracted"))
