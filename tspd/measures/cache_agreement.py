"""Why a KV-cached decode parts from its no-cache twin (Fast-dLLM's prefix and dual caches, paper Table 4).

A cached forward reuses the keys and values of the positions outside its window as they were at the
start of the block. Inside a block the canvas changes after every commit, so those keys grow stale
and the window's logits drift from the full forward's. Whether the drift changes an answer depends on
how close the decision it touches was.

For a stateless controller (vanilla, Fast-dLLM) the two runs see the same canvas until they commit
differently; before the first commit of a token that they do not both end with, they may at most have
committed the same tokens in another order, so a difference in confidence at that step ("the parting")
is the cache's doing. :func:`first_parting` reads that step from the two runs' traces: how far the cache
moved the confidences there (``shift``) and how close the no-cache run's token choice was (``slack``:
its top-1/top-2 probability margin). A shift at least as large as the slack is a near-tie flipped by
stale keys; a parting at the first forward of a block would point at a bug (that forward is exact by
test).

The experiment, on an embedded model: for each stateless controller (:data:`CONTROLLERS`: vanilla, Fast-dLLM at
0.9) and cache (:data:`CACHES`: prefix, dual), :func:`measure` decodes the first N held-out problems of the model's
own task one at a time with and without the cache, recording traces: same final answer and same text as the
no-cache run, and for the runs that part, the first parting step.

The record: ``python -m tspd cache-agreement`` (:mod:`tspd.commands.cache_agreement`) writes
``results/cache_agreement.json`` (one row per controller and cache, :func:`summary_rows`) and its per-problem rows,
``results/cache_agreement.samples.jsonl``, as they are made; a rerun skips what is there. :func:`load` reads it,
:func:`save` writes one. Its table: :func:`markdown` (the README's), :func:`agreement_table` (the status and
controllers pages').
"""
from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from tspd.decoding.loop import Trace, generate
from tspd.markdown import table as markdown_table
from tspd.provenance import REPO_ROOT
from tspd.records.files import append_jsonl, read_json, read_jsonl, write_json
from tspd.stats import wilson
from tspd.tasks.generated import whole_answer_key

CONTROLLERS = {"vanilla": {}, "fast-dllm": {"threshold": 0.9}}
CACHES = ("prefix", "dual")


# --------------------------------------------------------------------------------------------------------------
# Where a cached run parts from its twin: the parting step read from two traces, and its summary
# --------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Parting:
    step: int             # forward index (from 0) of the first commit of a token the two runs end up not sharing
    block: int
    step_in_block: int    # forwards since the block's first (exact) forward
    kind: str             # "flip": the runs' argmax differs there; "timing": same argmax, one run commits, one waits
    shift: float          # mean |conf_cached - conf_full| at those positions, that step
    block_shift: float    # the same over every masked position of the block
    slack: float          # the no-cache run's top-1/top-2 probability margin at those positions, that step


def final_tokens(trace: Trace, row: int = 0) -> torch.Tensor:
    """[L] the token each position ended with (the argmax at the step that committed it; -1 if never)."""
    committed = trace.committed[:, row]                               # [S, L]
    step = torch.where(committed.any(0), committed.float().argmax(0), torch.full_like(committed[0], -1, dtype=torch.long))
    out = torch.full_like(step, -1)
    done = step >= 0
    out[done] = trace.x0[step[done], row, torch.nonzero(done).squeeze(-1)]
    return out


def first_parting(ref: Trace, alt: Trace, row: int = 0) -> Parting | None:
    """Where ``alt`` (cached) starts to differ from ``ref`` (no cache), or None if they end the same.

    Runs may commit the same tokens in another order (ties among near-certain positions) and still end
    the same; those are not partings. The parting is the first step at which either run commits a token
    at a position where the final tokens differ.
    """
    differ = final_tokens(ref, row) != final_tokens(alt, row)
    if not differ.any():
        return None
    steps = min(ref.committed.shape[0], alt.committed.shape[0])
    block_starts: dict[int, int] = {}
    for s in range(steps):
        b = int(ref.block[s])
        block_starts.setdefault(b, s)
        where = differ & (ref.committed[s, row] | alt.committed[s, row])
        if not where.any():
            continue
        conf_ref, conf_alt = ref.conf[s, row], alt.conf[s, row]
        in_block = ref.masked[s, row] & ~torch.isnan(ref.seen_conf[s, row])
        flip = (ref.x0[s, row] != alt.x0[s, row])[where].any().item()
        return Parting(step=s, block=b, step_in_block=s - block_starts[b], kind="flip" if flip else "timing",
                       shift=(conf_alt - conf_ref)[where].abs().float().mean().item(),
                       block_shift=(conf_alt - conf_ref)[in_block].abs().float().mean().item(),
                       slack=ref.margin[s, row][where].float().mean().item())
    return None


def summarise(partings: list[Parting | None]) -> dict:
    """Counts and medians over the runs that parted (of ``len(partings)``); ``near_tie`` = shift >= slack."""
    parted = [p for p in partings if p is not None]
    out = {"parted": len(parted)}
    if not parted:
        return out

    def med(xs: list) -> float:
        return statistics.median(xs) if xs else math.nan

    out.update(
        flip=sum(p.kind == "flip" for p in parted),
        timing=sum(p.kind == "timing" for p in parted),
        median_step_in_block=med([p.step_in_block for p in parted]),
        median_shift=med([p.shift for p in parted]),
        median_block_shift=med([p.block_shift for p in parted]),
        median_slack=med([p.slack for p in parted]),
        near_tie=sum(p.shift >= p.slack for p in parted),
        first_step_of_block=sum(p.step_in_block == 0 for p in parted),
    )
    return out


def as_dict(p: Parting | None) -> dict | None:
    return None if p is None else asdict(p)


# --------------------------------------------------------------------------------------------------------------
# The experiment: a problem's rows under one controller, and the summary row per controller and cache
# --------------------------------------------------------------------------------------------------------------
def rows_for(model, task, problem: dict, controller: str, kwargs: dict) -> list[dict]:
    """One problem of ``task`` (a generated task's module) under one controller: the no-cache run against each
    cached one."""
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


# --------------------------------------------------------------------------------------------------------------
# The record: results/cache_agreement.json and its per-problem rows, measured problem by problem
# --------------------------------------------------------------------------------------------------------------
PATH = REPO_ROOT / "results" / "cache_agreement.json"


def samples_path(path: str | Path | None = None) -> Path:
    """The per-problem rows beside the summary at ``path``: ``<name>.samples.jsonl``."""
    return Path(path or PATH).with_suffix(".samples.jsonl")


@dataclass(frozen=True)
class CacheAgreement:
    """The stored summary: the model and problem count it was measured on, one dict per (controller, cache)."""
    model: str
    n: int
    rows: list[dict]

    def by_controller(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for r in self.rows:
            out.setdefault(r["policy"], []).append(r)
        return out


def load(path: str | Path | None = None) -> CacheAgreement:
    data = read_json(path or PATH)
    return CacheAgreement(data["model"], data["n"], data["rows"])


def load_dict(path: str | Path | None = None) -> dict:
    return read_json(path or PATH)


def save(result: dict, path: str | Path | None = None) -> Path:
    return write_json(path or PATH, result)


def load_samples(path: str | Path | None = None) -> list[dict]:
    """The per-problem rows stored so far ([] before the first)."""
    return read_jsonl(samples_path(path), missing_ok=True)


def append_samples(rows: list[dict], path: str | Path | None = None) -> None:
    append_jsonl(samples_path(path), rows, ensure_ascii=True)


def measure(model: str, n: int, out: Path, command: str) -> dict:
    """The first ``n`` held-out problems of ``model``'s own task under each controller, with and without each cache:
    per-problem rows appended to ``<out>.samples.jsonl`` as they are made (those already there are kept, not
    redone), the summary saved at ``out``; returns the summary."""
    from tqdm import tqdm

    from tspd.models.loading import load_model
    from tspd.provenance import device_name, git_revision
    from tspd.tasks.generated import trained_task
    task = trained_task(model)   # before anything is written
    done = load_samples(out)
    seen = {(r["id"], r["policy"]) for r in done}
    loaded = load_model(model)
    problems = task.load_split("test", n)
    work = [(p, controller) for controller in CONTROLLERS for p in problems if (p["id"], controller) not in seen]
    for p, controller in tqdm(work, desc="cache agreement", disable=not work):
        rows = rows_for(loaded, task, p, controller, CONTROLLERS[controller])
        append_samples(rows, out)
        done.extend(rows)
    ids = {p["id"] for p in problems}
    result = dict(model=model, n=n, command=command, revision=git_revision(),
                  device=device_name("cpu"), rows=summary_rows([r for r in done if r["id"] in ids]))
    save(result, out)
    return result


# --------------------------------------------------------------------------------------------------------------
# The record's table
# --------------------------------------------------------------------------------------------------------------
def markdown(result: dict) -> str:
    """The README's table of the stored summary."""
    header = ["controller", "cache", "n", "same answer (95 % interval)", "same text", "parted", "near-tie partings",
              "median forwards since block start", "median confidence shift", "median slack"]
    rows = [[r["policy"], r["cache"], r["n"], f"{r['same_answer']:.1%} ({r['same_answer_95'][0]:.1%}-"
             f"{r['same_answer_95'][1]:.1%})", f"{r['same_text']:.1%}", r["parted"], f"{r.get('near_tie', 0)} of {r['parted']}",
             f"{r.get('median_step_in_block', float('nan')):.0f}", f"{r.get('median_shift', float('nan')):.3f}",
             f"{r.get('median_slack', float('nan')):.3f}"] for r in result["rows"]]
    if all("lost" in r for r in result["rows"]):   # records made before the rows kept their faults have none
        header += ["lost / gained answers", "lost as"]
        rows = [row + [f"{r['lost']} / {r['gained']}", "; ".join(f"{kind} ({k})" for kind, k in r["lost_faults"].items())
                       or "-"] for row, r in zip(rows, result["rows"])]
    return "\n".join(markdown_table(header, rows))


def agreement_table(path: str | Path | None = None) -> str:
    """The status and controllers pages' table: :func:`markdown` of the stored summary, led by the model it was
    measured on where that is not the book's."""
    from tspd.models.loading import DEFAULT_MODEL
    data = load_dict(path)
    table = markdown(data)
    return table if data["model"] == DEFAULT_MODEL else f"Measured on `{data['model']}`, not on `{DEFAULT_MODEL}`.\n\n{table}"


__all__ = ["Parting", "final_tokens", "first_parting", "summarise", "as_dict", "CONTROLLERS", "CACHES", "rows_for",
           "summary_rows", "changed", "PATH", "samples_path", "CacheAgreement", "load", "load_dict", "save",
           "load_samples", "append_samples", "measure", "markdown", "agreement_table"]
