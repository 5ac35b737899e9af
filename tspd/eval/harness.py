"""``python -m tspd eval``: run a benchmark; one JSON line per sample, resumable; a summary at the end.

Each finished batch is graded and its rows are appended to ``--out`` (flushed and fsync'd) before the
next batch starts, so a killed run loses only the batch in flight. Rerunning with the same ``--out``
reads the rows already there (a truncated last line is dropped), skips their ids and goes on; rows of
a different configuration in that file are an error rather than silently mixed.

Row: ``id, correct, reason, output, extracted, nfe, seconds, gen_tokens`` plus batch bookkeeping
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

import argparse
import json
import os
import secrets
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tspd.decoding.config import DecodeConfig
from tspd.eval.results import PHASES, ResultsError, ResultsFile, config_id, summarize, summary_path  # noqa: F401 (re-exported)
from tspd.eval.shard import Shard, merge
from tspd.provenance import portable
from tspd.validate import CACHE_MODES
from tspd.eval.tasks import TASKS, TaskDataError, Task, get_task, use_chat

REFERENCE = "reference"   # --model value that answers with the data set's reference completions


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", required=True, choices=sorted(TASKS), help="benchmark")
    p.add_argument("--model", default=None,
                   help=f"checkpoint directory or embedded model name (None: the embedded one), "
                        f"or '{REFERENCE}' for the data set's reference answers")
    p.add_argument("--policy", default="vanilla", help="decoding controller (tspd.decoding.controllers)")
    p.add_argument("--policy-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="extra controller argument (value parsed as JSON when it can be); repeatable")
    p.add_argument("--ce", action="store_true", help="Confidence Extrapolation")
    p.add_argument("--cache", choices=CACHE_MODES, default="none", help="KV cache mode")
    p.add_argument("--fast", action="store_true",
                   help="replay forwards from CUDA graphs (tspd.decoding.graphs): same tokens, less host overhead on a GPU; "
                        "graphs are captured again whenever a batch's prompt width changes")
    p.add_argument("--gen-length", type=int, default=None,
                   help="generated positions L_gen (default: the checkpoint's own; 256 for LLaDA-8B)")
    p.add_argument("--block-length", type=int, default=None,
                   help="semi-autoregressive block width (default: the checkpoint's own; 32 for LLaDA-8B)")
    p.add_argument("--steps", type=int, default=None, help="step budget (None: gen length)")
    p.add_argument("--threshold", type=float, default=None, help="confidence threshold of the policy")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--confidence-dtype", default="float32", choices=("float32", "float64", "bfloat16"),
                   help="dtype of the softmax statistics (LLaDA: bfloat16, Fast-dLLM: float64)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (temperature > 0)")
    p.add_argument("--limit", type=int, default=None, help="first N samples only (0 or unset: all)")
    p.add_argument("--batch-size", type=int, default=1, help="prompts per generate() call")
    p.add_argument("--device", default="cpu", help="torch device of the model")
    p.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                   help="model dtype (auto: float32 on CPU, bfloat16 elsewhere)")
    p.add_argument("--chat", default="auto", choices=("auto", "on", "off"),
                   help="chat template: auto = when the tokenizer has one (Instruct models)")
    p.add_argument("--data-dir", default=None, help="evaluation data directory (None: $TSPD_DATA_DIR, "
                                                    "<repo>/../shared/data, <repo>/data)")
    p.add_argument("--source", default=None, help="a 'datasets' hub id to read instead of local files")
    p.add_argument("--grade-workers", type=int, default=2, help="parallel sandboxes for code tasks")
    p.add_argument("--controller", default=None,
                   help="trained tspd / learn2pd controller: a directory or weights stem (default: the one in "
                        "<model>/controllers/), or an embedded model's name to borrow its controller")
    p.add_argument("--truncate-prompt", action="store_true",
                   help="keep the last tokens of prompts too long for the model (default: refuse them); "
                        "counted in the summary")
    p.add_argument("--profile", action="store_true",
                   help="time each batch's model forwards, controller and CE (generate(profile=True), which "
                        "synchronises the device at every phase) and store each row's share of them")
    p.add_argument("--out", required=True, help="results FILE.jsonl (resumed if it exists)")


def main(args: argparse.Namespace, seam: "Seam | None" = None) -> int:
    """``python -m tspd eval``; ``seam`` as in :func:`run`."""
    try:
        if args.controller:
            from tspd.decoding.controllers.weights import controller_weights
            args.policy_arg = [*args.policy_arg, f"weights={json.dumps(controller_weights(args.controller, args.policy))}"]
        fill_lengths(args)
        summary = run(args, seam)
    except (TaskDataError, ResultsError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished samples are in {args.out}; rerun the same command to resume",
              file=sys.stderr)
        return 130
    print(json.dumps(summary, indent=2))
    return 0


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------
def parse_policy_args(items: list[str]) -> dict:
    """``["k=v", ...]`` -> dict; values are JSON when they parse (numbers, booleans), else strings."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--policy-arg expects KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def check_args(args: argparse.Namespace) -> None:
    """Every option checked before any weights load or any row is written (tspd.validate)."""
    from tspd.models.loading import CheckpointError, read_config, resolve_path
    from tspd.decoding.controllers.weights import check_controller_files
    from tspd.validate import UsageError, check_device, check_dtype
    if args.batch_size < 1:
        raise UsageError(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.limit is not None and args.limit < 0:
        raise UsageError(f"--limit must be >= 0 (0: every sample), got {args.limit}")
    out = Path(args.out)
    if out.is_dir():
        raise UsageError(f"--out {out} is a directory: give a results file such as {out / 'results.jsonl'}")
    parent = out.parent if str(out.parent) else Path(".")
    existing = next((p for p in [parent, *parent.parents] if p.exists()), Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UsageError(f"cannot write --out {out}: choose a path in a writable directory")
    if args.model == REFERENCE:
        return
    check_device(args.device)
    check_dtype(args.dtype)
    try:   # a directory that is not a checkpoint fails in load_model, which reads config.json before weights
        path = resolve_path(args.model)
        config, _ = read_config(path)
    except CheckpointError:
        path = config = None
    trained_on = (getattr(config, "extra", None) or {}).get("tspd_task", {}).get("fingerprint")
    if args.task == "arith" and trained_on:
        from tspd.eval.tasks import arith
        if trained_on != arith.fingerprint():
            raise UsageError(f"{path} was trained on another version of tspd.eval.tasks.arith (task fingerprint "
                             f"{trained_on}, this code's {arith.fingerprint()}): retrain it with "
                             f"`python -m tspd train-lm`, or check out the revision it was trained with")
    decode = decode_config(args)   # policy and its arguments, lengths, temperature, dtype: checked on construction
    check_controller_files(args.model, args.policy, decode.policy_kwargs)


def fill_lengths(args: argparse.Namespace) -> None:
    """``--gen-length`` / ``--block-length`` not given: the checkpoint's own (its config.json, no weights)."""
    from tspd.models.loading import PAPER_LENGTHS, decode_lengths
    if args.gen_length is None or args.block_length is None:
        own = PAPER_LENGTHS if args.model == REFERENCE else decode_lengths(args.model)
        args.gen_length = args.gen_length or own[0]
        args.block_length = args.block_length or own[1]


def run_config(args: argparse.Namespace) -> dict:
    """Everything that changes what a sample's row contains (not: limit, batch size, device, paths)."""
    return {"task": args.task, "split": "test", "source": args.source, "model": args.model,
            "policy": args.policy, "policy_kwargs": portable(parse_policy_args(args.policy_arg)), "ce": args.ce,
            "cache": args.cache, "gen_length": args.gen_length, "block_length": args.block_length,
            "steps": args.steps, "threshold": args.threshold, "temperature": args.temperature,
            "seed": args.seed, "chat": args.chat, "dtype": args.dtype,
            **({"truncate_prompt": True} if args.truncate_prompt else {}),
            **({"confidence_dtype": args.confidence_dtype} if args.confidence_dtype != "float32" else {})}


# --------------------------------------------------------------------------------------------
# Completion backends: the reference solutions, or a model through tspd.generate
# --------------------------------------------------------------------------------------------
@dataclass
class BatchOutput:
    """Completions of one batch. ``texts`` are cut at stop strings, ``raw`` are not."""
    texts: list[str]
    raw: list[str]
    nfe: list[int]
    gen_tokens: list[int | None]
    seconds: float
    gen_length: int
    truncated: list[bool] | None = None   # prompts left-truncated to fit the model (--truncate-prompt)
    phases: dict[str, float] | None = None   # --profile: the batch's seconds per phase (PHASES)


class ReferenceBackend:
    """Answers with each sample's reference completion; no model, no forwards, no time."""
    chat = False

    def __init__(self, task: Task):
        self.task = task

    def __call__(self, samples: list[dict]) -> BatchOutput:
        texts = [self.task.reference_completion(s) for s in samples]
        n = len(samples)
        return BatchOutput(texts, texts, [0] * n, [0] * n, 0.0, 0)


Seam = tuple   # (load_model, generate): how the harness loads a checkpoint and decodes a batch


def package_seam() -> Seam:
    """The package's own ``(tspd.load_model, tspd.decoding.loop.generate)``."""
    from tspd.decoding.loop import generate
    from tspd.models.loading import load_model
    return load_model, generate


def decode_config(args: argparse.Namespace) -> DecodeConfig:
    """The decoding an eval command line asks for (``--threshold`` joins ``--policy-arg``)."""
    return DecodeConfig.of(policy=args.policy, policy_kwargs=parse_policy_args(args.policy_arg), ce=args.ce,
                           cache=args.cache, gen_length=args.gen_length, block_length=args.block_length,
                           steps=args.steps, temperature=args.temperature, threshold=args.threshold,
                           seed=args.seed if args.temperature > 0 else None, fast=args.fast,
                           confidence_dtype=args.confidence_dtype)


class ModelBackend:
    """Prompts -> ``generate`` -> stop strings; counts NFE and non-padding generated tokens."""

    def __init__(self, task: Task, args: argparse.Namespace, device: str | None = None, seam: Seam | None = None):
        load_model, self.generate = seam or package_seam()
        self.task, self.args = task, args
        dtype = None if args.dtype == "auto" else args.dtype
        self.model = load_model(args.model, device=device or args.device, dtype=dtype)
        self.tokenizer = getattr(self.model, "tokenizer", None)
        wanted = {"auto": None, "on": True, "off": False}[args.chat]
        self.chat = task.supports_chat and use_chat(self.tokenizer, wanted)
        special = self.model.special
        self.skip_ids = set(special.stop_ids()) | {special.pad, special.mask}
        self.decode = decode_config(args)
        self.call_options = {"truncate_prompt": True} if args.truncate_prompt else {}
        if getattr(args, "profile", False):
            self.call_options["profile"] = True

    def __call__(self, samples: list[dict]) -> BatchOutput:
        prompts = [self.task.prompt(s, self.tokenizer, self.chat) for s in samples]
        out = self.generate(self.model, prompts, self.decode, **self.call_options)
        raw = list(out.texts)
        texts = [self.task.postprocess(t, self.chat) for t in raw]
        nfe = list(getattr(out, "nfe_per_sample", None) or [out.nfe] * len(samples))
        ids = getattr(out, "token_ids", None)
        if ids is not None:
            rows = ids.tolist()
            gen_tokens = [sum(1 for t in row if t not in self.skip_ids) for row in rows]
            gen_length = len(rows[0]) if rows else self.args.gen_length
        else:
            gen_tokens, gen_length = [None] * len(samples), self.args.gen_length
        phases = {k: float(getattr(out, k)) for k in PHASES if getattr(out, k, None) is not None}
        return BatchOutput(texts, raw, nfe, gen_tokens, float(out.seconds), gen_length,
                           list(getattr(out, "truncated", None) or []) or None, phases or None)


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


def run(args: argparse.Namespace, seam: Seam | None = None, task: Task | None = None) -> dict:
    """Evaluate (resuming ``args.out``) and return the summary (also written next to the out file).

    ``seam`` is the ``(load_model, generate)`` pair the model backend uses: None for the package's
    own; :func:`tspd.eval.experiments.run` passes one that keeps models loaded between runs. ``task``
    is the benchmark (None: ``get_task(args.task)``; a caller may pass one it has already loaded).
    """
    check_args(args)
    task = task or get_task(args.task, data_dir=args.data_dir, source=args.source)
    samples = task.samples(args.limit or None)      # --limit 0 / None: every sample
    config = run_config(args)
    cid = config_id(config)
    shard = Shard.from_env()   # torchrun / accelerate launch: this process's share (tspd.eval.shard)
    results = ResultsFile(shard.path(args.out))
    existing = results.load()
    if shard.active and Path(args.out).exists():   # rows merged by an earlier sharded or plain run
        existing += [r for r in ResultsFile(args.out).load() if r["id"] not in {e["id"] for e in existing}]
    foreign = next((r for r in existing if r.get("config") != cid), None)
    if foreign is not None:
        raise ResultsError(f"{args.out} holds results of another configuration (config "
                           f"{foreign.get('config')} != {cid}); use another --out")
    done = {r["id"] for r in existing}
    pending = [s for s in shard.take(samples) if s["id"] not in done]

    t_start = time.perf_counter()
    chat = any(r.get("chat") for r in existing)   # what earlier runs used, if nothing is left to do
    if pending:
        gen = ReferenceBackend(task) if args.model == REFERENCE else \
            ModelBackend(task, args, shard.device(args.device), seam)
        chat = gen.chat
        session = secrets.token_hex(4)   # batches of this process; its first one is the warm-up
        from tqdm import tqdm
        mine = len(shard.take(samples))
        bar = tqdm(total=mine, initial=mine - len(pending), desc=f"eval {task.name}" + (
                   f" [{shard.rank + 1}/{shard.world}]" if shard.active else ""),
                   unit="sample", disable=None, file=sys.stderr)
        try:
            for k in range(0, len(pending), args.batch_size):
                batch = pending[k:k + args.batch_size]
                out = gen(batch)
                grades = grade_batch(task, batch, out.texts, args.grade_workers)
                index = k // args.batch_size
                rows = make_rows(batch, out, grades, f"{session}:{index}", index == 0, cid, chat)
                results.append(rows)
                existing.extend(rows)
                correct = sum(r["correct"] for r in existing)
                bar.update(len(batch))
                bar.set_postfix(acc=f"{correct / len(existing):.3f}")
        finally:
            bar.close()

    if shard.active:
        shard.barrier()                     # every shard has written all its rows
        if shard.rank != 0:
            shard.close()
            return {"shard": shard.rank, "world": shard.world, "n": len(existing)}
        existing = merge(args.out, [s["id"] for s in samples], lambda f: ResultsFile(f).load())
        shard.close()
    wanted = {s["id"] for s in samples}
    rows = {}
    for r in existing:
        if r["id"] in wanted:
            rows.setdefault(r["id"], r)
    summary = summarize(list(rows.values()), n_selected=len(samples))
    summary.update({"task": task.name, "model": args.model, "chat": chat, "config": config,
                    "config_id": cid, "out": str(args.out), "shards": shard.world,
                    "run_seconds": round(time.perf_counter() - t_start, 3)})
    path = summary_path(args.out)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(tmp, path)
    return summary
