"""Results of an evaluation: the per-sample rows file, its summary, and throughput.

The rows file is append-only JSON lines that survive a kill at any point (:class:`ResultsFile`; a finished
run's file may be stored packed, gzipped beside its name, as the controller table's are); the
summary (:func:`summarize`) gives accuracy, NFE and throughput as the paper defines it (Appendix A.1:
``tps`` = sum of B * L_gen over batches / their summed wall time, each session's first batch left
out as its warm-up when others exist) and the field's hardware-free measure of parallelism, TPF
(:func:`tpf`: tokens per forward, as the d3LLM leaderboard counts them). :func:`config_id` is the hash stored in every row, so rows of two
configurations are never mixed. :mod:`tspd.eval.harness` writes these; :mod:`tspd.eval.experiments`,
the controller table and the notebooks read them.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from tspd.records.files import append_jsonl, read_jsonl, write_atomic

try:
    import fcntl                        # POSIX: one writer per results file (Windows: no lock is taken)
except ImportError:                     # pragma: no cover
    fcntl = None


PHASE_FIELDS = ("forward_seconds", "controller_seconds", "ce_seconds")   # per-row phase times (eval --profile)


class ResultsError(ValueError):
    """An unusable results file (corrupt line, or rows from another configuration)."""


def config_id(config: dict) -> str:
    """A short stable hash of what a row's content depends on (stored in every row, checked on resume).

    Not the run registry's key (:attr:`tspd.eval.experiments.RunConfig.key`, which names a results
    file): the key also covers the device and batch size, because they change the timing a run
    reports, while this id leaves them out, because they do not change what a sample decodes to; so
    ``python -m tspd eval`` may resume a file on another machine or batch size, and the registry still
    keeps such runs in separate files.
    """
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]


def _needs_id(row) -> str | None:
    return None if isinstance(row, dict) and "id" in row else "a results row needs an 'id'"


class ResultsFile:
    """Append-only JSONL of per-sample rows that survives being killed at any point.

    A finished run's rows may be stored packed (:meth:`pack`: ``FILE.jsonl.gz`` in place of ``FILE.jsonl``; long
    answers shrink about 18x); the file reads the same either way, and an append unpacks it first."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.packed = self.path.with_name(self.path.name + ".gz")

    def exists(self) -> bool:
        return self.path.exists() or self.packed.exists()

    def load(self) -> list[dict]:
        """Rows already written. A last line without its newline (cut by a kill) is dropped and the
        file truncated to the last complete line; a corrupt complete line is an error."""
        source = self.packed if self.packed.exists() and not self.path.exists() else self.path
        rows, seen = [], set()
        for row in read_jsonl(source, partial_ok=True, missing_ok=True, error=ResultsError,
                              bad="corrupt results line ({msg}); fix or delete it", check=_needs_id):
            if row["id"] not in seen:     # a file written twice over (before the lock) counts each id once
                seen.add(row["id"])
                rows.append(row)
        return rows

    def pack(self) -> Path:
        """Store the rows gzipped (byte-stable: no timestamp in the header) and remove the plain file."""
        if self.path.exists():
            data = gzip.compress(self.path.read_bytes(), compresslevel=9, mtime=0)
            write_atomic(self.packed, lambda tmp: tmp.write_bytes(data))
            self.path.unlink()
        return self.packed

    def unpack(self) -> Path:
        """The plain file again (before appending to a packed run)."""
        if self.packed.exists() and not self.path.exists():
            data = gzip.decompress(self.packed.read_bytes())
            write_atomic(self.path, lambda tmp: tmp.write_bytes(data))
            self.packed.unlink()
        return self.path

    @contextmanager
    def lock(self):
        """Hold ``FILE.lock`` beside the rows file while writing them: a second writer stops at once with a
        :class:`ResultsError` naming the process that holds it (the lock goes with that process, even if killed)."""
        if fcntl is None:               # pragma: no cover
            yield
            return
        path = self.path.with_name(self.path.name + ".lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            f = open(path, "a+")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                holder = f.read().strip() or "another process"
                f.close()
                raise ResultsError(f"{self.path} is being written by {holder}: wait for it to finish, or give "
                                   "another output file") from None
            if path.exists() and os.stat(path).st_ino == os.fstat(f.fileno()).st_ino:
                break                   # not a lock file its last holder had just removed
            f.close()
        try:
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()} ({' '.join(sys.argv[:4]) or 'python'})\n")
            f.flush()
            yield
        finally:
            path.unlink(missing_ok=True)
            f.close()

    def append(self, rows: list[dict]) -> None:
        """Write rows as complete lines, then flush and fsync them."""
        self.unpack()
        append_jsonl(self.path, rows, fsync=True)


def summary_path(out: str | Path) -> Path:
    """``x.jsonl`` -> ``x.summary.json`` (other names get ``.summary.json`` appended)."""
    out = Path(out)
    stem = out.name[:-len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(stem + ".summary.json")


def reason_kind(reason: str | None) -> str:
    """A failure reason without its details: ``failed: NameError``, ``wrong answer``, ``timeout``."""
    if not reason:
        return "none"
    parts = reason.split(": ")
    return ": ".join(parts[:2]) if parts[0] == "failed" else parts[0]


def summarize(rows: list[dict], n_selected: int | None = None) -> dict:
    """Accuracy, NFE and throughput over result rows (one per sample)."""
    n = len(rows)
    correct = sum(bool(r["correct"]) for r in rows)
    out = {"n": n, "n_selected": n_selected if n_selected is not None else n,
           "complete": n_selected is None or n == n_selected, "correct": correct,
           "accuracy": correct / n if n else None}
    if any("correct_strict" in r for r in rows):
        out["accuracy_strict"] = sum(bool(r.get("correct_strict")) for r in rows) / n
    nfes = [r["nfe"] for r in rows if r.get("nfe") is not None]
    out["nfe_mean"] = sum(nfes) / len(nfes) if nfes else None
    out["tpf"] = tpf(rows)
    out.update(throughput(rows))
    out.update(phase_shares(rows))
    out["failures"] = dict(Counter(reason_kind(r.get("reason")) for r in rows if not r["correct"]).most_common())
    out["truncated_prompts"] = sum(bool(r.get("prompt_truncated")) for r in rows)
    return out


def tpf(rows: list[dict]) -> float | None:
    """TPF, tokens per forward: the rows' generated tokens that are not EOS/EoT, pad or mask
    (``gen_tokens``) over the forwards that wrote them, each row counted by its own ``nfe``.

    The one definition for stored rows, the same count as :attr:`tspd.decoding.loop.Generation.tokens_per_forward`
    and the d3LLM leaderboard's TPF (hao-ai-lab, "Who is the Most Parallel Parallel-Decoder?"): a sum over
    sums, so a long answer weighs as many tokens as it has. Unlike ``gen_length / NFE`` it does not count
    the EOS tail a decoder fills once the answer is done. None without a row that has both counts.
    """
    used = [r for r in rows if r.get("gen_tokens") is not None and r.get("nfe")]
    forwards = sum(r["nfe"] for r in used)
    return sum(r["gen_tokens"] for r in used) / forwards if forwards else None


def row_tpf(row: dict) -> float | None:
    """One row's TPF (:func:`tpf` of that row alone)."""
    return tpf([row])


def throughput(rows: list[dict]) -> dict:
    """``tps`` = sum(B * L_gen) / sum(batch wall time) and ``tps_nonpad`` over the same batches.

    Batches are grouped by their ``batch`` id; each run's first batch (``warmup``) is left out when
    any other batch exists. None when no generation time was recorded (``--model reference``).
    """
    batches: dict[str, dict] = {}
    for r in rows:
        b = batches.setdefault(r.get("batch", ""), {"size": r.get("batch_size") or 0,
                                                     "seconds": r.get("batch_seconds") or 0.0,
                                                     "gen_length": r.get("gen_length") or 0,
                                                     "warmup": bool(r.get("warmup")), "nonpad": 0})
        b["nonpad"] += r.get("gen_tokens") or 0
    timed = [b for b in batches.values() if b["seconds"] > 0]
    steady = [b for b in timed if not b["warmup"]]
    used = steady if steady else timed
    seconds = sum(b["seconds"] for b in used)
    if not used or seconds <= 0:
        return {"tps": None, "tps_nonpad": None, "gen_seconds": 0.0, "batches": len(batches),
                "batches_timed": 0}
    tokens = sum(b["size"] * b["gen_length"] for b in used)
    return {"tps": tokens / seconds, "tps_nonpad": sum(b["nonpad"] for b in used) / seconds,
            "gen_seconds": round(seconds, 6), "batches": len(batches), "batches_timed": len(used)}


def phase_shares(rows: list[dict]) -> dict:
    """``forward_ms`` (one forward) and the controller's and CE's time as a percentage of the forwards'
    (paper Section 5.4), over the batches :func:`throughput` times; {} unless every row has phase times.

    A batch's forwards are its rows' largest NFE (its rows share the batch's forwards).
    """
    if not rows or any(r.get(k) is None for r in rows for k in PHASE_FIELDS):
        return {}
    used = [r for r in rows if not r.get("warmup")] or rows
    forwards: dict[str, int] = {}
    for r in used:
        forwards[r.get("batch", "")] = max(forwards.get(r.get("batch", ""), 0), r.get("nfe") or 0)
    total = {k: sum(r[k] for r in used) for k in PHASE_FIELDS}
    steps = sum(forwards.values())
    if total["forward_seconds"] <= 0 or steps <= 0:
        return {}
    return {"forward_ms": 1000 * total["forward_seconds"] / steps,
            "controller_pct_of_forward": 100 * total["controller_seconds"] / total["forward_seconds"],
            "ce_pct_of_forward": 100 * total["ce_seconds"] / total["forward_seconds"]}
