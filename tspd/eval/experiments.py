"""The run registry the notebooks share: one configuration is measured once, then read back.

A :class:`RunConfig` names everything that changes what a benchmark run produces (model, task,
decoding controller and its settings, CE, cache, lengths, seed, device, dtype, batch size). Its ``key``
is a short hash of those fields. :func:`result` keeps the results of one key in ``results_dir``
(``results/runs/`` by default; its files and their one owner: :mod:`tspd.records.runs`).

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
to tspd's own code are not detected: pass ``force=True`` (or delete the files) after changing a controller.
"""
from __future__ import annotations

import contextlib
import io
import platform
import shlex
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from tspd.decoding.config import decode_options
from tspd.decoding.loop import generate
from tspd.eval import harness
from tspd.eval.job import EvalJob, EvalOptions, RunConfig, opened
from tspd.eval.results import summarize
from tspd.records import runs
from tspd.records.rows import ResultsError
from tspd.tasks.registry import get_task
from tspd.models.loaded import get_model, model_fingerprint
from tspd.provenance import device_name, git_revision


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
                   "policy": c.controller, "ce": c.ce, "cache": c.cache, "device": self.device_name}
        return {**extra, **self.summary, "setting": setting, "key": self.key}


# ------------------------------------------------------------------------------------------------
# Models, tasks, devices
# ------------------------------------------------------------------------------------------------
_TASKS: dict[str, object] = {}


def _task(name: str):
    if name not in _TASKS:
        _TASKS[name] = get_task(name)
    return _TASKS[name]


# ------------------------------------------------------------------------------------------------
# The harness
# ------------------------------------------------------------------------------------------------
def eval_command(config: RunConfig, results_dir: str | Path | None = None) -> str:
    """The shell command that fills this config's results file (for runs outside a notebook): the same
    job as :func:`result`'s, so either one resumes the other's rows."""
    out = runs.rows_file(config.key, results_dir).path
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


def load_result(config: RunConfig, results_dir: str | Path | None = None, task=None) -> "RunResult | None":
    """The stored result of ``config`` if every requested sample is there; never computes."""
    if not runs.rows_file(config.key, results_dir).exists():
        return None
    rows = runs.stored(config.key, results_dir)
    samples = (task or _task(config.task)).samples(config.limit)
    if any(s["id"] not in rows for s in samples):
        return None
    meta = runs.read_sidecar(config.key, results_dir) or {}
    name = (meta.get("devices") or ["unknown"])[-1]
    return _to_result(config, [rows[s["id"]] for s in samples], runs.rows_file(config.key, results_dir).path, name, 0)


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
    results_dir = runs.folder(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    key = config.key
    rows_file = runs.rows_file(key, results_dir)
    task = task or _task(config.task)
    samples = task.samples(config.limit)

    meta = runs.read_sidecar(key, results_dir)
    # opened once (by the config, or here): fingerprinted here, checked and loaded by the harness (stored runs
    # need no checkpoint)
    checkpoint = config.checkpoint or opened(config.model)
    fingerprint = model_fingerprint(checkpoint) if checkpoint else None
    stale = bool(meta and fingerprint and meta.get("model_fingerprint") not in (None, fingerprint))
    if stale:
        warnings.warn(f"{config.label}: the checkpoint {config.model!r} changed since {key} was computed; recomputing")
    if force or stale:
        runs.retire(key, results_dir)
        meta = None
    before = runs.stored(key, results_dir)
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
        runs.write_sidecar(key, meta, results_dir)
        quiet = contextlib.redirect_stderr(io.StringIO()) if not progress else contextlib.nullcontext()
        try:
            with quiet:
                job = EvalJob(config, rows_file.path, EvalOptions(profile=profile), checkpoint)
                harness.evaluate(job, seam=seam or _cached_seam(), task=task)
        except ResultsError as e:
            if force:
                raise
            # rows written under another harness configuration: keep them aside and start again
            warnings.warn(f"{config.label}: {e}; recomputing")
            return result(config, progress=progress, results_dir=results_dir, force=True, seam=seam, task=task,
                          profile=profile)
    rows = runs.stored(key, results_dir)
    picked = [rows[s["id"]] for s in samples]
    return _to_result(config, picked, rows_file.path, name, len(todo))


def results(configs: list[RunConfig], **kwargs) -> list[RunResult]:
    """:func:`result` for each config in turn (models stay loaded between them)."""
    return [result(c, **kwargs) for c in configs]


__all__ = ["RunConfig", "RunResult", "result", "results", "load_result", "eval_command"]
