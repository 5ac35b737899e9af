"""What an evaluation's rows add up to: accuracy, NFE, throughput and TPF.

The rows themselves are a rows file (:class:`tspd.records.rows.ResultsFile`). The
summary (:func:`summarize`) gives accuracy, NFE and throughput as the paper defines it (Appendix A.1:
``tps`` = sum of B * L_gen over batches / their summed wall time, each session's first batch left
out as its warm-up when others exist) and the field's hardware-free measure of parallelism, TPF
(:func:`tpf`: tokens per forward, as the d3LLM leaderboard counts them).
"""
from __future__ import annotations

from collections import Counter

PHASE_FIELDS = ("forward_seconds", "controller_seconds", "ce_seconds")   # per-row phase times (eval --profile)


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
    removed = sum(r.get("files_removed") or 0 for r in rows)
    if removed:   # code tasks: files generated programs left outside their directory (tspd.sandbox)
        out["files_removed"] = removed
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
