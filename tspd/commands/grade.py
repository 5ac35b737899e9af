"""``python -m tspd grade``: grade completions made elsewhere.

Input: JSONL rows ``{"id": ..., "completion": ...}`` (ids as ``python -m tspd eval`` writes them, e.g.
``gsm8k/test/0``, ``HumanEval/0``, ``mbpp/11``). Output: one line per input row,
``{"id", "correct", "reason", "extracted", ...}``, to ``--out`` or stdout; the accuracy goes to stderr.
Completions are graded as given; ``--apply-stops`` first cuts them at the task's stop strings
(:mod:`tspd.eval.completions`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tspd.eval.completions import grade_counts, grade_rows, read_completions
from tspd.tasks.registry import TASKS, TaskDataError, get_task


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", required=True, choices=sorted(TASKS), help="benchmark the completions answer")
    p.add_argument("--completions", required=True, help="JSONL with 'id' and 'completion' per line")
    p.add_argument("--out", default=None, help="results JSONL (default: stdout)")
    p.add_argument("--data-dir", default=None, help="evaluation data directory (default: as for eval)")
    p.add_argument("--apply-stops", action="store_true", help="cut completions at the task's stop strings")
    p.add_argument("--chat", action="store_true", help="with --apply-stops: the completions answer chat prompts")
    p.add_argument("--grade-workers", type=int, default=2, help="parallel sandboxes for code tasks")


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
    print(json.dumps({"task": task.name, **grade_counts(results)}), file=sys.stderr)
    return 0
