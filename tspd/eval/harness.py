"""The evaluation harness (``python -m tspd eval``, :mod:`tspd.commands.eval`): run a benchmark; one JSON line
per sample, resumable; a summary at the end.

:func:`evaluate` takes one typed job (:class:`tspd.eval.job.EvalJob`: the :class:`~tspd.eval.job.RunConfig`,
the rows file, the run-time options and the checkpoint, opened once: its ``config.json`` is read once per
job); the command line builds it (:func:`tspd.commands.eval.job_from_args`), the notebooks' registry
(:func:`tspd.eval.experiments.result`) builds it from a RunConfig, and nothing below here sees a command
line.

Each finished batch is graded and its rows are appended to ``--out`` (flushed and fsync'd) before the
next batch starts, so a killed run loses only the batch in flight. Rerunning with the same ``--out``
reads the rows already there (a truncated last line is dropped), skips their ids and goes on; rows of
a different configuration in that file are an error rather than silently mixed.

Row: ``id, correct, reason, output, extracted, nfe, seconds, gen_tokens, tpf`` (the row's own TPF, :func:`tspd.eval.results.tpf`) plus batch bookkeeping
(``batch, batch_size, batch_seconds, gen_length, warmup``), ``chat``, the configuration hash ``config``,
task-specific grading fields and ``raw_output`` when stop strings cut the generation. With ``--profile``
also ``forward_seconds, controller_seconds, ce_seconds``: the row's share of its batch's time in model
forwards, the controller's ``decide()`` and CE's ``update()`` (``generate(..., profile=True)``; not part
of the configuration, since it does not change what is decoded).

Summary (``FILE.summary.json`` next to ``FILE.jsonl``, also printed): ``accuracy``, ``n``, ``nfe_mean``,
``tps`` = sum of B * L_gen over batches / their summed wall time (the paper's definition; each run's
first batch is a warm-up and is left out when other batches exist), ``tps_nonpad`` (generated tokens
that are not EOS/EoT/pad over the same time), failure reasons and the configuration; for profiled rows
also ``forward_ms`` per step and the controller's and CE's time as a percentage of the forwards'.

Sharded: ``torchrun --nproc-per-node N -m tspd eval ...`` or ``accelerate launch -m tspd eval ...``
splits the samples over the processes; each resumes its own shard file and rank 0 merges them
(:mod:`tspd.eval.shard`). TPS in the summary is then per process.

``--model reference`` answers with the data set's own reference solutions (no model, nfe 0): a check
of the loop, the results file and the graders (GSM8K, MATH, HumanEval and MBPP score 100 %).
"""
from __future__ import annotations

import os
import secrets
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tspd.decoding.loop import Generation
from tspd.eval.job import EvalJob
from tspd.eval.results import PHASE_FIELDS, row_tpf, summarize
from tspd.records.rows import ResultsError, ResultsFile, config_id
from tspd.eval.shard import Shard, merge
from tspd.tasks.registry import Task, get_task, use_chat
from tspd.models.loading import Checkpoint, checkpoint_task
from tspd.provenance import portable_path
from tspd.validate import UsageError

REFERENCE = "reference"   # --model value that answers with the data set's reference completions


def check_job(job: EvalJob, checkpoint: Checkpoint | None) -> None:
    """What a job needs before any weights load or any row is written: a writable results file, a
    checkpoint (None: the reference answers) trained on this version of its task, and a learned controller's
    trained weights."""
    from tspd.decoding.controllers.weights import check_controller_files
    out = job.out
    if out.is_dir():
        raise UsageError(f"--out {out} is a directory: give a results file such as {out / 'results.jsonl'}")
    parent = out.parent if str(out.parent) else Path(".")
    existing = next((p for p in [parent, *parent.parents] if p.exists()), Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UsageError(f"cannot write --out {out}: choose a path in a writable directory")
    if checkpoint is None:
        return
    config, trained_on = job.config, checkpoint.trained_on
    if trained_on and checkpoint_task(checkpoint) == config.task:   # a train-lm checkpoint on its own task
        from tspd.tasks.generated import generated_task
        task = generated_task(config.task)
        if trained_on != task.fingerprint():
            raise UsageError(f"{checkpoint.path} was trained on another version of {task.__name__} (task "
                             f"fingerprint {trained_on}, this code's {task.fingerprint()}): retrain it with "
                             f"`python -m tspd train-lm`, or check out the revision it was trained with")
    check_controller_files(checkpoint, config.controller, config.controller_kwargs)


# --------------------------------------------------------------------------------------------
# Completion backends: the reference solutions, or a model through tspd.generate
# --------------------------------------------------------------------------------------------
@dataclass
class BatchOutput:
    """Completions of one batch. ``texts`` are cut at stop strings, ``raw`` are not."""
    texts: list[str]
    raw: list[str]
    nfe: list[int]
    gen_tokens: list[int]
    seconds: float
    gen_length: int
    truncated: list[bool] | None = None   # prompts left-truncated to fit the model (--truncate-prompt)
    phases: dict[str, float] | None = None   # --profile: the batch's seconds per phase (PHASE_FIELDS)


class ReferenceBackend:
    """Answers with each sample's reference completion; no model, no forwards, no time."""
    chat = False

    def __init__(self, task: Task):
        self.task = task

    def __call__(self, samples: list[dict]) -> BatchOutput:
        texts = [self.task.reference_completion(s) for s in samples]
        n = len(samples)
        return BatchOutput(texts, texts, [0] * n, [0] * n, 0.0, 0)


Seam = tuple   # (load_model, generate): how the harness loads the job's Checkpoint and decodes a batch


def package_seam() -> Seam:
    """The package's own ``(tspd.load_model, tspd.decoding.loop.generate)``."""
    from tspd.decoding.loop import generate
    from tspd.models.loading import load_model
    return load_model, generate


class ModelBackend:
    """Prompts -> ``generate`` -> stop strings; counts NFE and non-padding generated tokens."""

    def __init__(self, task: Task, job: EvalJob, checkpoint: Checkpoint, device: str | None = None,
                 seam: Seam | None = None):
        load_model, self.generate = seam or package_seam()
        self.task = task
        self.model = load_model(checkpoint, device=device or job.config.device, dtype=job.config.dtype)
        self.tokenizer = self.model.tokenizer
        wanted = {"auto": None, "on": True, "off": False}[job.options.chat]
        self.chat = task.supports_chat and use_chat(self.tokenizer, wanted)
        special = self.model.special
        self.skip_ids = set(special.stop_ids()) | {special.pad, special.mask}
        self.decode = job.config.decode
        self.call_options = {"truncate_prompt": True} if job.options.truncate_prompt else {}
        if job.options.profile:
            self.call_options["profile"] = True

    def __call__(self, samples: list[dict]) -> BatchOutput:
        prompts = [self.task.prompt(s, self.tokenizer, self.chat) for s in samples]
        out: Generation = self.generate(self.model, prompts, self.decode, **self.call_options)
        raw = list(out.texts)
        texts = [self.task.postprocess(t, self.chat) for t in raw]
        gen_tokens = [sum(1 for t in row if t not in self.skip_ids) for row in out.token_ids.tolist()]
        phases = {k: float(getattr(out, k)) for k in PHASE_FIELDS if getattr(out, k) is not None}   # with --profile
        return BatchOutput(texts, raw, list(out.nfe_per_sample), gen_tokens, float(out.seconds),
                           out.token_ids.shape[1], list(out.truncated) or None, phases or None)


# --------------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------------
def grade_batch(task: Task, samples: list[dict], completions: list[str], workers: int = 1) -> list[dict]:
    """Grade completions; code tasks run their sandboxes ``workers`` at a time (others stay in the main
    thread, where math_verify's signal-based time limit works)."""
    pairs = list(zip(samples, completions))
    if task.executes_code and workers > 1 and len(pairs) > 1:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            return list(ex.map(lambda p: task.grade(*p), pairs))
    return [task.grade(s, c) for s, c in pairs]


def make_rows(samples: list[dict], out: BatchOutput, grades: list[dict], batch: str, warmup: bool,
              cid: str, chat: bool = False) -> list[dict]:
    rows = []
    n = len(samples)
    for i, (s, g) in enumerate(zip(samples, grades)):
        row = {"id": s["id"], "correct": bool(g["correct"]), "reason": g.get("reason"),
               "output": out.texts[i], "extracted": g.get("extracted"), "nfe": out.nfe[i],
               "seconds": round(out.seconds / n, 6), "gen_tokens": out.gen_tokens[i],
               "tpf": row_tpf({"gen_tokens": out.gen_tokens[i], "nfe": out.nfe[i]}),
               "batch": batch, "batch_size": n, "batch_seconds": round(out.seconds, 6),
               "gen_length": out.gen_length, "warmup": warmup, "chat": chat, "config": cid}
        row.update({k: v for k, v in g.items() if k not in row})
        if out.raw[i] != out.texts[i]:
            row["raw_output"] = out.raw[i]
        if out.truncated and out.truncated[i]:
            row["prompt_truncated"] = True
        row.update({k: round(v / n, 6) for k, v in (out.phases or {}).items()})
        rows.append(row)
    return rows


def _decode_pending(backend: ReferenceBackend | ModelBackend, job: EvalJob, task: Task, pending: list[dict],
                    existing: list[dict], results: ResultsFile, cid: str, shard: Shard, mine: int) -> None:
    """Decode, grade and append ``pending`` one batch at a time: each batch's rows are written to ``results``
    (and added to ``existing``) before the next starts; a progress bar over this process's ``mine`` samples."""
    batch_size, chat = job.config.batch_size, backend.chat
    session = secrets.token_hex(4)   # batches of this process; its first one is the warm-up
    from tqdm import tqdm
    bar = tqdm(total=mine, initial=mine - len(pending), desc=f"eval {task.name}" + (
               f" [{shard.rank + 1}/{shard.world}]" if shard.active else ""),
               unit="sample", disable=None, file=sys.stderr)
    try:
        for k in range(0, len(pending), batch_size):
            batch = pending[k:k + batch_size]
            out = backend(batch)
            grades = grade_batch(task, batch, out.texts, job.options.grade_workers)
            index = k // batch_size
            rows = make_rows(batch, out, grades, f"{session}:{index}", index == 0, cid, chat)
            results.append(rows)
            existing.extend(rows)
            correct = sum(r["correct"] for r in existing)
            bar.update(len(batch))
            bar.set_postfix(acc=f"{correct / len(existing):.3f}")
    finally:
        bar.close()


def evaluate(job: EvalJob, seam: Seam | None = None, task: Task | None = None) -> dict:
    """Evaluate ``job`` (resuming its rows file) and return the summary (also written next to that file).

    ``seam`` is the ``(load_model, generate)`` pair the model backend uses: None for the package's
    own; :func:`tspd.eval.experiments.result` passes one that keeps models loaded between runs. Its
    ``load_model`` is handed the job's :class:`~tspd.models.loading.Checkpoint` (opened here, once, when
    the job does not carry it). ``task`` is the benchmark (None: ``get_task(job.config.task)``; a caller
    may pass one it has already loaded).
    """
    config, options, out_path = job.config, job.options, job.out
    checkpoint = None if config.model == REFERENCE else job.checkpoint or config.checkpoint or Checkpoint.open(config.model)
    check_job(job, checkpoint)
    task = task or get_task(config.task, data_dir=options.data_dir, source=options.source)
    samples = task.samples(config.limit)            # limit None: every sample
    row_config = job.row_config()
    cid = config_id(row_config)
    shard = Shard.from_env()   # torchrun / accelerate launch: this process's share (tspd.eval.shard)
    results = ResultsFile(shard.path(out_path))
    with results.lock():   # one writer per results file: a second process on it stops at once
        existing = results.load()
        if shard.active and ResultsFile(out_path).exists():   # rows merged by an earlier sharded or plain run
            existing += [r for r in ResultsFile(out_path).load() if r["id"] not in {e["id"] for e in existing}]
        foreign = next((r for r in existing if r.get("config") != cid), None)
        if foreign is not None:
            raise ResultsError(f"{out_path} holds results of another configuration (config "
                               f"{foreign.get('config')} != {cid}); use another --out")
        done = {r["id"] for r in existing}
        pending = [s for s in shard.take(samples) if s["id"] not in done]

        t_start = time.perf_counter()
        chat = any(r.get("chat") for r in existing)   # what earlier runs used, if nothing is left to do
        if pending:
            backend = ReferenceBackend(task) if checkpoint is None else \
                ModelBackend(task, job, checkpoint, shard.device(config.device), seam)
            chat = backend.chat
            _decode_pending(backend, job, task, pending, existing, results, cid, shard, len(shard.take(samples)))

        if shard.active:
            shard.barrier()                     # every shard has written all its rows
            if shard.rank != 0:
                shard.close()
                return {"shard": shard.rank, "world": shard.world, "n": len(existing)}
            existing = merge(out_path, [s["id"] for s in samples])
            shard.close()
        wanted = {s["id"] for s in samples}
        rows = {}
        for r in existing:
            if r["id"] in wanted:
                rows.setdefault(r["id"], r)
        summary = summarize(list(rows.values()), n_selected=len(samples))
        summary.update({"task": task.name, "model": config.model, "chat": chat, "config": row_config,
                        "config_id": cid, "out": portable_path(str(out_path)), "shards": shard.world,
                        "run_seconds": round(time.perf_counter() - t_start, 3)})
        ResultsFile(out_path).write_summary(summary)
        return summary
