"""``python -m tspd grade``: grade completions made elsewhere.

Input: JSONL rows ``{"id": ..., "completion": ...}`` (ids as ``python -m tspd eval`` writes them, e.g.
``gsm8k/test/0``, ``HumanEval/0``, ``mbpp/11``). Output: one line per input row,
``{"id", "correct", "reason", "extracted", ...}``, to ``--out`` or stdout; the accuracy goes to stderr.
Completions are graded as given; ``--apply-stops`` first cuts them at the task's stop strings.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tspd.eval.harness import grade_batch
from tspd.eval.results import reason_kind
from tspd.eval.tasks import TASKS, TaskDataError, get_task
from tspd.records.files import read_jsonl


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", required=True, choices=sorted(TASKS), help="benchmark the completions answer")
    p.add_argument("--completions", required=True, help="JSONL with 'id' and 'completion' per line")
    p.add_argument("--out", default=None, help="results JSONL (default: stdout)")
    p.add_argument("--data-dir", default=None, help="evaluation data directory (default: as for eval)")
    p.add_argument("--apply-stops", action="store_true", help="cut completions at the task's stop strings")
    p.add_argument("--chat", action="store_true", help="with --apply-stops: the completions answer chat prompts")
    p.add_argument("--grade-workers", type=int, default=2, help="parallel sandboxes for code tasks")


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


def main(args: argparse.Namespace) -> int:
    try:
        task = get_task(args.task, data_dir=args.data_dir)
        rows = read_completions(args.completions)
        results = grade_rows(task, rows, args.apply_stops, args.chat, args.grade_workers)
    except (TaskDataError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    n = len(results)
    correct = sum(r["correct"] for r in results)
    failures = {}
    for r in results:
        if not r["correct"]:
            kind = reason_kind(r["reason"])
            failures[kind] = failures.get(kind, 0) + 1
    print(json.dumps({"task": task.name, "n": n, "correct": correct,
                      "accuracy": correct / n if n else None, "failures": failures}), file=sys.stderr)
    return 0
