"""The claims' verdicts as the status page shows them (spans ``claims-summary``, ``claims-decided``), and what they
can mean on the embedded model (the "What reproduces" page's :func:`verdict_context`).

Both tables read the notebooks' stored verdicts (:func:`tspd.book.claims.store.load_all`) through
:func:`tspd.book.claims.page.verdict_rows`: one row per claim and task, its verdict and the quantity that decided it.
"""
from __future__ import annotations

from tspd.book.claims.page import verdict_rows
from tspd.book.claims.stats import FAILS, HOLDS, OPEN, number
from tspd.book.claims.store import load_all
from tspd.markdown import table
from tspd.models.loading import DEFAULT_MODEL

VERDICTS = (HOLDS, FAILS, OPEN, "not measured")

NEEDS = ("So the accuracy a controller keeps says something, but a table notebook's intervals are a few points wide at "
         "its 200 problems: small accuracy differences stay inconclusive.")
NO_NEED = ("So parallel decoding costs this model no accuracy that its record shows, and the accuracy columns cannot "
           "tell the controllers apart: the claims about forwards and wall time carry the comparison.")
CACHE_COSTS = ("Unlike LLaDA-8B (Fast-dLLM's report), this model loses accuracy to a KV cache (Table 4, below), which "
               "weighs on every claim about a cached method; the claims about forwards, wall time and traces do not "
               "depend on it.")
CACHE_FREE = "As for LLaDA-8B (Fast-dLLM's report), the KV caches cost it no accuracy that Table 4's intervals show:"


def _where(row: dict, rows: list[dict]) -> str:
    """``Table 2 (roster / roster-dream)`` where the claim is checked on several tasks, else ``Table 2``."""
    several = sum(r["where"] == row["where"] for r in rows) > 1
    return f"{row['where']} ({row['task']})" if several else row["where"]


def summary_table(stored: dict | None = None) -> str:
    """A row per verdict ("not measured" only where some claim is): how many claims, which, and their n."""
    rows = verdict_rows(load_all() if stored is None else stored)
    out = []
    for verdict in VERDICTS:
        got = [r for r in rows if r["verdict"] == verdict]
        if got or verdict != "not measured":
            ns = sorted({int(r["n"]) for r in got if r["n"] is not None})
            out.append([verdict, len(got), ", ".join(_where(r, rows) for r in got) or "-",
                        ", ".join(map(str, ns)) or "-"])
    return "\n".join(table([f"verdict ({len(rows)} claims, 95 % bootstrap intervals)", "claims", "where",
                            "n (problems or prompts)"], out))


def decisive_table(stored: dict | None = None) -> str:
    """A row per claim and task: its verdict and the quantity that decided it, value [95 % interval] and claimed
    side, and its n."""
    rows = verdict_rows(load_all() if stored is None else stored)
    body = [[_where(r, rows), r["verdict"], r["decided by"] or "-", r["n"] or "-"] for r in rows]
    return "\n".join(table(["claim", "verdict", "decided by: value [95 % interval], claimed", "n"], body))


def verdict_context(model: str = DEFAULT_MODEL, stored: dict | None = None) -> str:
    """What the verdicts can mean on ``model`` (Markdown): its record's table (:mod:`tspd.book.model_card`), what
    its accuracy columns can tell, and Table 4's accuracy costs of the caches, each from its record."""
    from tspd.book.model_card import model_table, needs_lines
    from tspd.tasks.generated import trained_task
    stored = load_all() if stored is None else stored
    caches = [f for c in (stored.get("table04_kv_cache") or {}).values() for f in c.findings()
              if f.quantity.startswith("accuracy")]
    parts = ["**What the verdicts can mean here.** The embedded model's own record:", model_table(model),
             NEEDS if needs_lines(model) else NO_NEED]
    if caches:
        parts.append(CACHE_COSTS if any(f.hi < 0 for f in caches) else CACHE_FREE)
        parts.append("\n".join(table(["Table 4 (paired, same problems)", "value", "95 % interval", "n"],
                                     [[f.quantity, number(f.value), f"{number(f.lo)} to {number(f.hi)}", f.n]
                                      for f in caches])))
    parts.append(f"A small model on {trained_task(model).SUMMARY} remains weak evidence about the paper's 8B models "
                 "on GSM8K.")
    return "\n\n".join(parts)


__all__ = ["VERDICTS", "summary_table", "decisive_table", "verdict_context"]
