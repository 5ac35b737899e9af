"""Cache agreement on the embedded model, and why the cached runs that part from their twin do.

For each stateless controller (vanilla, Fast-dLLM at 0.9) and cache (prefix, dual), decodes the first N
held-out problems of the model's own task (``arith`` for ``tiny-arith``; ``--model``, default the book's model)
one at a time with and without the cache, recording traces, and writes
``results/cache_agreement.json``: same final answer and same text as the no-cache run, and for the runs
that part, the first parting step (``tspd.eval.cache_agreement``). Per-problem rows go to
``<out>.samples.jsonl`` as they are made; a rerun skips what is there.

    .venv/bin/python scripts/cache_agreement.py --n 500 --threads 2
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tspd import load_model  # noqa: E402
from tspd.eval.tasks.generated import trained_task  # noqa: E402
from tspd.eval.cache_agreement import as_dict, first_parting, summarise, Parting  # noqa: E402
from tspd.eval.results import wilson  # noqa: E402
from tspd.decoding.loop import generate  # noqa: E402
from tspd.models.loading import DEFAULT_MODEL  # noqa: E402
from tspd.provenance import device_name, git_revision  # noqa: E402

POLICIES = {"vanilla": {}, "fast-dllm": {"threshold": 0.9}}
CACHES = ("prefix", "dual")


def rows_for(model, task, problem: dict, policy: str, kwargs: dict) -> list[dict]:
    """One problem of ``task`` (a generated task's module) under one policy: the no-cache run against each
    cached one."""
    run = lambda cache: generate(model, [task.prompt(problem)], policy=policy, policy_kwargs=kwargs,  # noqa: E731
                                 cache=cache, record_trace=True)
    answer = getattr(task, "answer_key", task.extract_answer)   # what "the same answer" compares
    ref = run("none")
    ref_pred = answer(ref.texts[0])
    rows = []
    for cache in CACHES:
        alt = run(cache)
        pred = answer(alt.texts[0])
        rows.append(dict(id=problem["id"], policy=policy, cache=cache, same_text=alt.texts[0] == ref.texts[0],
                         same_answer=pred == ref_pred, correct_no_cache=task.right(problem, ref.texts[0]),
                         correct=task.right(problem, alt.texts[0]),
                         parting=as_dict(first_parting(ref.trace, alt.trace))))
    return rows


def table(rows: list[dict]) -> list[dict]:
    out = []
    for policy in POLICIES:
        for cache in CACHES:
            rs = [r for r in rows if r["policy"] == policy and r["cache"] == cache]
            if not rs:
                continue
            n = len(rs)
            same_answer = sum(r["same_answer"] for r in rs)
            partings = [None if r["parting"] is None else Parting(**r["parting"]) for r in rs]
            out.append(dict(policy=policy, cache=cache, n=n, same_answer=same_answer / n,
                            same_answer_95=wilson(same_answer, n), same_text=sum(r["same_text"] for r in rs) / n,
                            accuracy_no_cache=sum(r["correct_no_cache"] for r in rs) / n,
                            accuracy=sum(r["correct"] for r in rs) / n, **summarise(partings)))
    return out


def markdown(result: dict) -> str:
    lines = ["| controller | cache | n | same answer (95 % interval) | same text | parted | near-tie partings | "
             "median forwards since block start | median confidence shift | median slack |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lo, hi = r["same_answer_95"]
        lines.append(f"| {r['policy']} | {r['cache']} | {r['n']} | {r['same_answer']:.1%} ({lo:.1%}-{hi:.1%}) | "
                     f"{r['same_text']:.1%} | {r['parted']} | {r.get('near_tie', 0)} of {r['parted']} | "
                     f"{r.get('median_step_in_block', float('nan')):.0f} | {r.get('median_shift', float('nan')):.3f} | "
                     f"{r.get('median_slack', float('nan')):.3f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL, help="embedded model name or checkpoint directory (train-lm)")
    ap.add_argument("--n", type=int, default=500, help="held-out test problems of the model's task")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    ap.add_argument("--out", default=str(ROOT / "results" / "cache_agreement.json"), help="summary JSON")
    ap.add_argument("--markdown", action="store_true", help="print the stored table as Markdown and exit")
    args = ap.parse_args()
    out = Path(args.out)
    if args.markdown:
        print(markdown(json.loads(out.read_text())))
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    task = trained_task(args.model)   # before anything is written
    samples = out.with_suffix(".samples.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    done = [json.loads(line) for line in samples.read_text().splitlines()] if samples.exists() else []
    seen = {(r["id"], r["policy"]) for r in done}
    model = load_model(args.model)
    problems = task.load_split("test", args.n)
    work = [(p, policy) for policy in POLICIES for p in problems if (p["id"], policy) not in seen]
    for p, policy in tqdm(work, desc="cache agreement", disable=not work):
        rows = rows_for(model, task, p, policy, POLICIES[policy])
        with samples.open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        done.extend(rows)
    ids = {p["id"] for p in problems}
    result = dict(model=args.model, n=args.n, command=" ".join(["python", *sys.argv]), revision=git_revision(),
                  device=device_name("cpu"), rows=table([r for r in done if r["id"] in ids]))
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as e:   # a checkpoint that is missing or names no generated task: one line
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
