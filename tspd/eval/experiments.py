"""The run registry the notebooks share: one configuration is measured once, then read back.

A :class:`RunConfig` names everything that changes what a benchmark run produces (model, task,
decoding policy and its settings, CE, cache, lengths, seed, device, dtype, batch size). Its ``key``
is a short hash of those fields. :func:`result` keeps the results of one key in ``results_dir``::

    <key>.jsonl          per-sample rows written by the evaluation harness (:mod:`tspd.eval.harness`):
                         id, correct, output, nfe, seconds, gen_tokens, reason, extracted, batch timing
    <key>.summary.json   the harness's summary of the last call (its accuracy is a fraction)
    <key>.json           sidecar: the RunConfig, the device name(s), the checkpoint fingerprint,
                         versions

If the file already holds every requested sample, nothing is computed and no model is loaded; if it
holds some, only the missing ones are (a killed run resumes where it stopped). The computing is done
by ``tspd.eval.harness.evaluate``, the same code as ``python -m tspd eval``, so a GPU run started from the
shell with ``--out results/runs/<key>.jsonl`` (see :func:`eval_command`) fills the file a notebook
reads. ``limit`` is deliberately not part of the key: the first 50 samples are a prefix of the whole
split, so a larger ``limit`` extends the same file and a smaller one reads a prefix of it.

:attr:`RunResult.summary` follows the paper (Appendix A.1): ``tps`` = sum of B * L_gen over batches /
their wall time (each session's first batch is the warm-up and is left out when others exist),
``tps_nonpad`` counts only tokens that are not EOS/EoT/pad, ``tpf`` is tokens per forward
(:func:`tspd.eval.results.tpf`, the field's measure of parallelism), and ``accuracy`` is in **percent**, the
paper's unit (the harness's own summary file stores a fraction). Runs computed with ``profile=True``
(every row timed by phase) also have ``forward_ms``, ``controller_pct_of_forward`` and
``ce_pct_of_forward`` (:func:`tspd.eval.results.phase_shares`).

Staleness: the sidecar records a fingerprint of the checkpoint (config.json and the weight files'
sizes and first/last MiB). When the checkpoint behind a model name changes (e.g. the embedded model
is retrained), the old files are renamed ``<key>.stale-<time>.*`` and the run is recomputed. Changes
to tspd's own code are not detected: pass ``force=True`` (or delete the files) after changing a policy.
"""
from __future__ import annotations

import contextlib
import io
import json
import platform
import shlex
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import torch

from tspd.decoding.config import decode_options
from tspd.decoding.loop import generate
from tspd.eval import harness
from tspd.eval.job import EvalJob, EvalOptions, RunConfig, opened
from tspd.eval.results import ResultsError, ResultsFile, summarize
from tspd.eval.tasks import get_task
from tspd.models.loading import Checkpoint, CheckpointError, LoadedModel, load_model
from tspd.provenance import REPO_ROOT, device_name, git_revision

DEFAULT_RESULTS_DIR = REPO_ROOT / "results" / "runs"
MAX_MODELS = 2           # models kept loaded per process (an 8B model is 16 GB in bf16)

def ours_label(model: str, device: str, n: int | None) -> str:
    """``ours (tiny-arith, cpu, n=50)``: the provenance of numbers measured here."""
    name = Path(str(model)).name or str(model)
    return f"ours ({name}, {device}, n={n if n is not None else '?'})"


@dataclass
class RunResult:
    """The per-sample rows of one run (in the split's order) and their summary."""
    config: RunConfig
    samples: list[dict]
    summary: dict
    path: Path
    device_name: str
    computed: int = 0                  # samples computed by this call
    reused: int = 0                    # samples read from the results file

    @property
    def key(self) -> str:
        return self.config.key

    @property
    def label(self) -> str:
        """``ours (model, device, n=...)``, the provenance string for tables."""
        return ours_label(self.config.model, self.device_name, self.summary.get("n"))

    def row(self, **extra) -> dict:
        """The summary as a table row with the setting, for :func:`tspd.book.reported.side_by_side`."""
        c = self.config
        setting = {"model": c.model, "task": c.task, "gen_length": c.gen_length, "block_length": c.block_length,
                   "policy": c.policy, "ce": c.ce, "cache": c.cache, "device": self.device_name}
        return {**extra, **self.summary, "setting": setting, "key": self.key}


# ------------------------------------------------------------------------------------------------
# Models, tasks, devices
# ------------------------------------------------------------------------------------------------
_MODELS: "OrderedDict[tuple, LoadedModel]" = OrderedDict()
_TASKS: dict[str, object] = {}


def get_model(model: "str | Checkpoint", device: str = "cpu", dtype: str | None = None) -> LoadedModel:
    """A loaded model (a name, a directory or an opened :class:`Checkpoint`), cached per process by
    (checkpoint directory, device, dtype); the least recent is evicted."""
    checkpoint = Checkpoint.open(model)
    key = (checkpoint.path, device, dtype)
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    while len(_MODELS) >= MAX_MODELS:
        _MODELS.popitem(last=False)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    _MODELS[key] = load_model(checkpoint, device=device, dtype=dtype)
    return _MODELS[key]


def _task(name: str):
    if name not in _TASKS:
        _TASKS[name] = get_task(name)
    return _TASKS[name]


def model_fingerprint(model: "str | Checkpoint") -> str | None:
    """:meth:`Checkpoint.fingerprint` of ``model`` (config.json and its weight files' sizes and first / last
    MiB), or None when ``model`` is no checkpoint."""
    try:
        return Checkpoint.open(model).fingerprint()
    except CheckpointError:
        return None


# ------------------------------------------------------------------------------------------------
# The harness
# ------------------------------------------------------------------------------------------------
def eval_command(config: RunConfig, results_dir: str | Path | None = None) -> str:
    """The shell command that fills this config's results file (for runs outside a notebook): the same
    job as :func:`result`'s, so either one resumes the other's rows."""
    out = Path(results_dir or DEFAULT_RESULTS_DIR) / f"{config.key}.jsonl"
    parts = ["python -m tspd eval", "--task", config.task, "--model", config.model, *decode_options(config.decode),
             "--batch-size", str(config.batch_size), "--device", config.device, "--dtype", config.dtype]
    parts += ["--limit", str(config.limit)] if config.limit else []
    return " ".join([parts[0], *map(shlex.quote, parts[1:]), "--out", shlex.quote(str(out))])


def _cached_seam() -> "harness.Seam":
    """The harness's (load_model, generate) seam, with models cached per process."""
    return get_model, generate


def _to_result(config: RunConfig, rows: list[dict], path: Path, name: str, computed: int) -> "RunResult":
    summary = summarize(rows)
    out = {"n": summary["n"],
           "accuracy": None if summary["accuracy"] is None else 100.0 * summary["accuracy"],
           "nfe_mean": summary["nfe_mean"], "tpf": summary["tpf"], "tps": summary["tps"],
           "tps_nonpad": summary["tps_nonpad"],
           "gen_seconds": summary["gen_seconds"]}
    out.update({k: summary[k] for k in ("forward_ms", "controller_pct_of_forward", "ce_pct_of_forward")
                if k in summary})
    return RunResult(config, rows, out, path, name, computed, len(rows) - computed)


# ------------------------------------------------------------------------------------------------
# Results files
# ------------------------------------------------------------------------------------------------
def _paths(results_dir: Path, key: str) -> dict[str, Path]:
    return {"rows": results_dir / f"{key}.jsonl", "meta": results_dir / f"{key}.json",
            "summary": results_dir / f"{key}.summary.json"}


def _stored(path: Path) -> dict[str, dict]:
    """Stored rows by id (the harness's reader: a torn last line is dropped)."""
    return {r["id"]: r for r in ResultsFile(path).load()}


def _retire(results_dir: Path, key: str) -> None:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    paths = _paths(results_dir, key)
    for p in [*paths.values(), ResultsFile(paths["rows"]).packed]:
        if p.exists():
            p.rename(p.with_name(p.name.replace(key, f"{key}.stale-{stamp}", 1)))


def load_result(config: RunConfig, results_dir: str | Path | None = None, task=None) -> "RunResult | None":
    """The stored result of ``config`` if every requested sample is there; never computes."""
    paths = _paths(Path(results_dir or DEFAULT_RESULTS_DIR), config.key)
    if not ResultsFile(paths["rows"]).exists():
        return None
    rows = _stored(paths["rows"])
    samples = (task or _task(config.task)).samples(config.limit)
    if any(s["id"] not in rows for s in samples):
        return None
    meta = json.loads(paths["meta"].read_text()) if paths["meta"].exists() else {}
    name = (meta.get("devices") or ["unknown"])[-1]
    return _to_result(config, [rows[s["id"]] for s in samples], paths["rows"], name, 0)


def result(config: RunConfig, progress: bool = True, results_dir: str | Path | None = None,
           force: bool = False, seam: "harness.Seam | None" = None, task=None, profile: bool = False) -> "RunResult":
    """The result of ``config``: read back what is stored, compute (and append) what is missing.

    ``progress`` False silences the harness's progress bar (it draws one only on a terminal);
    ``force`` retires the stored files and recomputes everything. ``seam`` (``(load_model, generate)``,
    default: the package's, with models kept loaded) and ``task`` (default: ``get_task(config.task)``)
    are what the harness decodes with and on. ``profile`` stores each computed row's phase times
    (``forward_seconds``, ``controller_seconds``, ``ce_seconds``; the harness's ``--profile``); rows
    read back keep whatever they were stored with.
    """
    results_dir = Path(results_dir or DEFAULT_RESULTS_DIR)
    results_dir.mkdir(parents=True, exist_ok=True)
    key = config.key
    paths = _paths(results_dir, key)
    task = task or _task(config.task)
    samples = task.samples(config.limit)

    meta = json.loads(paths["meta"].read_text()) if paths["meta"].exists() else None
    # opened once (by the config, or here): fingerprinted here, checked and loaded by the harness (stored runs
    # need no checkpoint)
    checkpoint = config.checkpoint or opened(config.model)
    fingerprint = model_fingerprint(checkpoint) if checkpoint else None
    stale = bool(meta and fingerprint and meta.get("model_fingerprint") not in (None, fingerprint))
    if stale:
        warnings.warn(f"{config.label}: the checkpoint {config.model!r} changed since {key} was computed; recomputing")
    if force or stale:
        _retire(results_dir, key)
        meta = None
    before = _stored(paths["rows"])
    todo = [s for s in samples if s["id"] not in before]
    name = ((meta or {}).get("devices") or ["unknown"])[-1]
    if todo:
        name = device_name(config.device)
        meta = meta or {"key": key, "config": config.keyed(), "model_fingerprint": fingerprint,
                        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "devices": []}
        if meta["devices"] and name not in meta["devices"]:
            warnings.warn(f"{config.label}: resuming on {name}, earlier samples ran on {meta['devices'][-1]}; "
                          "their timings are not comparable")
        if name not in meta["devices"]:
            meta["devices"].append(name)
        meta.update(model_fingerprint=fingerprint, torch=torch.__version__, python=platform.python_version(),
                    tspd_revision=git_revision())
        paths["meta"].write_text(json.dumps(meta, indent=1) + "\n")
        quiet = contextlib.redirect_stderr(io.StringIO()) if not progress else contextlib.nullcontext()
        try:
            with quiet:
                job = EvalJob(config, paths["rows"], EvalOptions(profile=profile), checkpoint)
                harness.evaluate(job, seam=seam or _cached_seam(), task=task)
        except ResultsError as e:
            if force:
                raise
            # rows written under another harness configuration: keep them aside and start again
            warnings.warn(f"{config.label}: {e}; recomputing")
            return result(config, progress=progress, results_dir=results_dir, force=True, seam=seam, task=task,
                          profile=profile)
    rows = _stored(paths["rows"])
    picked = [rows[s["id"]] for s in samples]
    return _to_result(config, picked, paths["rows"], name, len(todo))


def results(configs: list[RunConfig], **kwargs) -> list[RunResult]:
    """:func:`result` for each config in turn (models stay loaded between them)."""
    return [result(c, **kwargs) for c in configs]


__all__ = ["RunConfig", "RunResult", "result", "results", "load_result", "eval_command",
           "get_model", "model_fingerprint", "DEFAULT_RESULTS_DIR"]
