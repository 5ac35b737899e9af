"""Grading completions made elsewhere (``python -m tspd grade``): read them, grade them against a task's
samples, count the failures by kind.

Input: JSONL rows ``{"id": ..., "completion": ...}`` (ids as ``python -m tspd eval`` writes them, e.g.
``gsm8k/test/0``, ``HumanEval/0``, ``mbpp/11``). Each row gets ``{"id", "correct", "reason", "extracted", ...}``;
completions are graded as given, or first cut at the task's stop strings (``apply_stops``).
"""
from __future__ import annotations

from pathlib import Path

from tspd.eval.harness import grade_batch
from tspd.eval.results import reason_kind
from tspd.records.files import read_jsonl


def read_completions(path: str | Path) -> list[dict]:
    """``{"id", "completion"}`` rows; a malformed line is a one-line ValueError naming it."""
    return read_jsonl(path, check=_completion_complaint)


def _completion_complaint(row) -> str | None:
    if not isinstance(row, dict) or "id" not in row or not isinstance(row.get("completion"), str):
        return "each row needs 'id' and a string 'completion'"
    return None


def grade_rows(task, rows: list[dict], apply_stops: bool = False, chat: bool = False, workers: int = 1) -> list[dict]:
    """One result per input row, in input order; unknown ids fail with reason ``unknown id``."""
    by_id = {s["id"]: s for s in task.samples()}
    known = [r for r in rows if str(r["id"]) in by_id]
    samples = [by_id[str(r["id"])] for r in known]
    texts = [task.postprocess(r["completion"], chat) if apply_stops else r["completion"] for r in known]
    grades = iter(grade_batch(task, samples, texts, workers))
    out = []
    for r in rows:
        if str(r["id"]) not in by_id:
            out.append({"id": r["id"], "correct": False, "reason": f"unknown id for task {task.name}",
                        "extracted": None})
            continue
        g = next(grades)
        out.append({"id": r["id"], "correct": bool(g["correct"]), "reason": g.get("reason"),
                    **{k: v for k, v in g.items() if k not in ("correct", "reason")}})
    return out


def grade_counts(results: list[dict]) -> dict:
    """``n``, ``correct``, ``accuracy`` (None without rows), the failures counted by kind
    (:func:`tspd.eval.results.reason_kind`) of graded rows, and ``files_removed`` when the code sandbox removed
    files that programs left behind."""
    n = len(results)
    correct = sum(r["correct"] for r in results)
    failures = {}
    for r in results:
        if not r["correct"]:
            kind = reason_kind(r["reason"])
            failures[kind] = failures.get(kind, 0) + 1
    counts = {"n": n, "correct": correct, "accuracy": correct / n if n else None, "failures": failures}
    removed = sum(r.get("files_removed") or 0 for r in results)
    if removed:
        counts["files_removed"] = removed
    return counts
