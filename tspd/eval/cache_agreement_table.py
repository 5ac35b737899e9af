"""Cache agreement on an embedded model, and why the cached runs that part from their twin do
(:mod:`tspd.records.cache_agreement`; the command: ``python -m tspd cache-agreement``, :mod:`tspd.commands.cache_agreement`).

For each stateless controller (vanilla, Fast-dLLM at 0.9) and cache (prefix, dual), decodes the first N
held-out problems of the model's own task one at a time with and without the cache, recording traces: same
final answer and same text as the no-cache run, and for the runs that part, the first parting step
(:mod:`tspd.eval.cache_agreement`). Per-problem rows are stored as they are made; a rerun skips what is there.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from tspd.eval.cache_agreement import Parting, as_dict, first_parting, summarise
from tspd.stats import wilson
from tspd.tasks.generated import whole_answer_key
from tspd.records import cache_agreement as record

CONTROLLERS = {"vanilla": {}, "fast-dllm": {"threshold": 0.9}}
CACHES = ("prefix", "dual")


def rows_for(model, task, problem: dict, controller: str, kwargs: dict) -> list[dict]:
    """One problem of ``task`` (a generated task's module) under one controller: the no-cache run against each
    cached one."""
    from tspd.decoding.loop import generate
    run = lambda cache: generate(model, [task.prompt(problem)], controller=controller, controller_kwargs=kwargs,  # noqa: E731
                                 cache=cache, record_trace=True)
    answer = whole_answer_key(task) or task.extract_answer      # what "the same answer" compares
    fault = getattr(task, "fault", None) or (lambda problem, text: None)   # why a wrong answer is (where it says)
    ref = run("none")
    ref_pred = answer(ref.texts[0])
    rows = []
    for cache in CACHES:
        alt = run(cache)
        pred = answer(alt.texts[0])
        rows.append(dict({"id": problem["id"], "policy": controller},   # (the stored rows' spelling)
                         cache=cache, same_text=alt.texts[0] == ref.texts[0],
                         same_answer=pred == ref_pred, correct_no_cache=task.right(problem, ref.texts[0]),
                         correct=task.right(problem, alt.texts[0]),
                         fault_no_cache=fault(problem, ref.texts[0]), fault=fault(problem, alt.texts[0]),
                         parting=as_dict(first_parting(ref.trace, alt.trace))))
    return rows


def summary_rows(rows: list[dict]) -> list[dict]:
    """One summary row per (controller, cache) of the per-problem rows."""
    out = []
    for controller in CONTROLLERS:
        for cache in CACHES:
            rs = [r for r in rows if r["policy"] == controller and r["cache"] == cache]
            if not rs:
                continue
            n = len(rs)
            same_answer = sum(r["same_answer"] for r in rs)
            partings = [None if r["parting"] is None else Parting(**r["parting"]) for r in rs]
            out.append(dict({"policy": controller}, cache=cache, n=n, same_answer=same_answer / n,
                            same_answer_95=wilson(same_answer, n), same_text=sum(r["same_text"] for r in rs) / n,
                            accuracy_no_cache=sum(r["correct_no_cache"] for r in rs) / n,
                            accuracy=sum(r["correct"] for r in rs) / n, **changed(rs), **summarise(partings)))
    return out


def changed(rows: list[dict]) -> dict:
    """Answers the cache turned wrong (``lost``) and right (``gained``), and the kinds of fault of those it lost
    (the task's reason with its numbers as N: ``day N: N hours, not N``), where the rows carry them."""
    lost = [r for r in rows if r["correct_no_cache"] and not r["correct"]]
    kinds = Counter(re.sub(r"\d+", "N", r["fault"]) for r in lost if r.get("fault"))
    return dict(lost=len(lost), gained=sum(not r["correct_no_cache"] and r["correct"] for r in rows),
                lost_faults=dict(kinds.most_common()))


def measure(model: str, n: int, out: Path, command: str) -> dict:
    """The first ``n`` held-out problems of ``model``'s own task under each controller, with and without each cache:
    per-problem rows appended to ``<out>.samples.jsonl`` as they are made (those already there are kept, not
    redone), the summary saved at ``out``; returns the summary."""
    from tqdm import tqdm

    from tspd.models.loading import load_model
    from tspd.provenance import device_name, git_revision
    from tspd.tasks.generated import trained_task
    task = trained_task(model)   # before anything is written
    done = record.load_samples(out)
    seen = {(r["id"], r["policy"]) for r in done}
    loaded = load_model(model)
    problems = task.load_split("test", n)
    work = [(p, controller) for controller in CONTROLLERS for p in problems if (p["id"], controller) not in seen]
    for p, controller in tqdm(work, desc="cache agreement", disable=not work):
        rows = rows_for(loaded, task, p, controller, CONTROLLERS[controller])
        record.append_samples(rows, out)
        done.extend(rows)
    ids = {p["id"] for p in problems}
    result = dict(model=model, n=n, command=command, revision=git_revision(),
                  device=device_name("cpu"), rows=summary_rows([r for r in done if r["id"] in ids]))
    record.save(result, out)
    return result
