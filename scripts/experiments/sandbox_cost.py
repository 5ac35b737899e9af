"""What the allowlist sandbox costs a graded problem against an earlier revision's (issue 79's "within 1.3x").

Grades the reference solutions of a benchmark with this checkout's sandbox and with another revision's (checked out
into a temporary git worktree), alternating the two trees round by round in fresh processes, so that a drift of the
machine hits both alike; reports each round's seconds a problem and the medians. Time it on a quiet machine.

    python scripts/experiments/sandbox_cost.py --task humaneval --rounds 8 --n 80 --out results/bench/sandbox-cost-humaneval.json

The earlier revision defaults to 770c9af, the last one before the allowlist root and the PID namespace.
"""
from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tspd.provenance import device_name, git_revision   # noqa: E402

# One tree's seconds a problem: the tree's own tspd first on the path (an editable install's finder removed).
PROBE = """
import os, sys, time, warnings
tree, task_name, n, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower() and "editable" not in type(f).__name__.lower()]
sys.path.insert(0, tree)
warnings.simplefilter("ignore")
import tspd
assert tspd.__file__.startswith(tree), tspd.__file__
try:
    from tspd.tasks.registry import get_task
except ImportError:
    from tspd.eval.tasks import get_task
task = get_task(task_name, data_dir=data)
samples = task.samples()[:n]
task.grade(samples[0], task.reference_completion(samples[0]))   # warm: the allowlist probe, imports
t = time.perf_counter()
right = sum(bool(task.grade(s, task.reference_completion(s))["correct"]) for s in samples)
print(right, len(samples), (time.perf_counter() - t) / len(samples))
"""


def seconds_a_problem(tree: Path, task: str, n: int, data: str) -> tuple[int, int, float]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(tree), task, str(n), data], capture_output=True, text=True,
                         cwd=tempfile.gettempdir(), check=True).stdout.split()
    return int(out[0]), int(out[1]), float(out[2])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="humaneval", choices=("humaneval", "mbpp"))
    p.add_argument("--old", default="770c9af", help="the earlier revision to compare against")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--n", type=int, default=80, help="problems graded a round")
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="the benchmarks' data directory")
    p.add_argument("--out", default=None, help="the record's JSON")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(old), args.old], check=True)
        try:
            rounds = []
            for i in range(args.rounds):
                o, new = seconds_a_problem(old, args.task, args.n, args.data), seconds_a_problem(REPO, args.task, args.n, args.data)
                rounds.append({"old": o[2], "new": new[2], "old_right": o[0], "new_right": new[0], "n": new[1]})
                print(f"round {i + 1}: old {o[2]:.4f} s, new {new[2]:.4f} s a problem, new / old {new[2] / o[2]:.2f}", flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)], check=True)
    med_old, med_new = statistics.median(r["old"] for r in rounds), statistics.median(r["new"] for r in rounds)
    record = {"command": shlex.join(["python", "scripts/experiments/sandbox_cost.py", *sys.argv[1:]]),
              "revision": git_revision(), "old_revision": args.old, "device": device_name("cpu"),
              "date": time.strftime("%Y-%m-%d"), "task": args.task, "rounds": rounds,
              "median_old": med_old, "median_new": med_new, "ratio_of_medians": med_new / med_old,
              "median_ratio": statistics.median(r["new"] / r["old"] for r in rounds)}
    print(f"median old {med_old:.4f} s, new {med_new:.4f} s a problem: new / old {record['ratio_of_medians']:.2f} "
          f"(median of the rounds' ratios {record['median_ratio']:.2f})")
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
