"""Every controller, with and without CE, under each KV-cache mode, on an embedded model: the 500-problem controller
table (book/controllers.md), made by ``python -m tspd controller-table`` (:mod:`tspd.commands.controller_table`).

Each (controller, CE, cache) row is one :class:`tspd.eval.experiments.RunConfig`: the notebooks' base run
(``tspd.book.base_run``) with the controller at its own default setting, run through the one evaluation
harness with phase timing; a row is named by its decoding (``fast-dllm|ce=on|cache=dual``,
:func:`tspd.decoding.names.slug`). Its runs live in ``controller_table/`` beside ``--out``, each stored packed
(gzipped, :meth:`tspd.records.rows.ResultsFile.pack`) once done; a rerun reads back what is there and computes
only what is missing (resumable). A row gives accuracy with its
Wilson 95 % interval, mean NFE, TPS on this machine (B * L_gen / T_wall, paper Appendix A.1), speedup over
vanilla, the controller's and CE's time per step as a percentage of one forward (paper Section 5.4), and
agreement with vanilla's answers and with each cached row's no-cache twin. The 500-problem run takes about
40 minutes on a 2-core CPU; start with ``--n 20``.

The record: :func:`make_table` writes ``results/embedded_controllers.json`` (:data:`PATH`), the summary of its
harness runs in ``results/controller_table/`` (:func:`runs_dir`), one row per (controller, CE, cache); :func:`load`
reads it (:class:`ControllerTable`), :func:`save` writes one. Its tables: :func:`markdown` (the controllers
page's), :func:`console` (the terminal's), :func:`overview_table` (the book's five controllers without a cache and
with the dual one) and :func:`comparisons_table` (paired comparisons on the table's problems).

The experiment runs through the harness (:mod:`tspd.eval`) and the notebooks' base run (:mod:`tspd.book.notebook`),
so it sits in the book's layer, not in :mod:`tspd.measures`.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from tspd.book.notebook import base_run
from tspd.decoding.names import display_name, slug
from tspd.eval import experiments
from tspd.eval.results import phase_shares
from tspd.markdown import table as markdown_table
from tspd.provenance import REPO_ROOT, git_revision, portable_path
from tspd.records.files import read_json, write_json
from tspd.records.rows import ResultsFile
from tspd.stats import wilson
from tspd.tasks.generated import row_answer
from tspd.validate import CACHE_MODES, UsageError

# the controllers of the table, each at its own default setting (no controller_kwargs: Fast-dLLM and Credit Decoding
# threshold 0.9; the learned tspd / learn2pd controllers load the weights shipped beside the embedded model,
# <model>/controllers/), as the notebooks' methods (tspd.book.METHODS) decode with them
CONTROLLERS = ("vanilla", "fast-dllm", "prophet", "credit", "learn2pd", "tspd")
CACHES = CACHE_MODES
BASELINE = ("vanilla", False, "none")


def choices(value: str, allowed, flag: str) -> list[str]:
    """A comma-separated option checked against ``allowed``; one-line UsageError otherwise."""
    items = [x for x in value.split(",") if x]
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise UsageError(f"{flag}: unknown {', '.join(bad) or 'empty list'}; choose from {', '.join(allowed)}")
    return items


def table_configs(args: argparse.Namespace) -> dict[tuple, experiments.RunConfig]:
    """The RunConfig of every requested (controller, CE, cache) row, the baseline row first."""
    base = base_run(dict(model=args.model, limit=args.n, gen_length=args.gen_length,
                         block_length=args.block_length, batch_size=args.batch_size))
    rows = [(c, ce == "on", cache) for c in choices(args.controllers, CONTROLLERS, "--controllers")
            for ce in choices(args.ce, ("off", "on"), "--ce") for cache in choices(args.caches, CACHES, "--caches")]
    rows = [BASELINE] + [r for r in rows if r != BASELINE]
    return {(c, ce, cache): base.replace(controller=c, controller_kwargs={}, ce=ce, cache=cache) for c, ce, cache in rows}


# --------------------------------------------------------------------------------------------------------------
# A row of the table from its run's per-problem rows; the table from every run
# --------------------------------------------------------------------------------------------------------------
def char_agreement(a: str, b: str) -> float:
    """Fraction of positions (over the longer text) where two answers have the same character."""
    n = max(len(a), len(b))
    return 1.0 if n == 0 else sum(x == y for x, y in zip(a, b)) / n


def agreement_with(rows: list[dict], ref: list[dict] | None, name: str, answer=lambda row: row["extracted"]) -> dict:
    """Same text, same answer (``answer(row)``: :func:`tspd.tasks.generated.row_answer` of the run's task)
    and character agreement with ``ref``'s rows of the same ids (fields ``same_text_as_<name>``, ...); None
    where no id is shared."""
    by_id = {r["id"]: r for r in ref or []}
    pairs = [(r, by_id[r["id"]]) for r in rows if r["id"] in by_id]
    mean = lambda f: sum(f(a, b) for a, b in pairs) / len(pairs) if pairs else None  # noqa: E731
    return {f"same_text_as_{name}": mean(lambda a, b: a["output"] == b["output"]),
            f"same_answer_as_{name}": mean(lambda a, b: answer(a) == answer(b)),
            f"char_agreement_with_{name}": mean(lambda a, b: char_agreement(a["output"], b["output"]))}


def table_row(name: tuple, result: experiments.RunResult, n: int, results: dict) -> dict:
    """One row of the table from a run's per-problem rows (``results``: every run, for agreement)."""
    ctrl, ce, cache = name
    got = result.samples
    correct = sum(bool(r["correct"]) for r in got)
    phases = phase_shares(got)
    row = dict(controller=ctrl, ce=ce, cache=cache, key=result.key, n=len(got), complete=len(got) == n,
               accuracy=correct / len(got), accuracy_95=wilson(correct, len(got)),
               nfe=sum(r["nfe"] for r in got) / len(got), tps=result.summary["tps"],
               seconds_per_sample=sum(r["seconds"] for r in got) / len(got),
               controller_pct_of_forward=phases.get("controller_pct_of_forward"),
               ce_pct_of_forward=phases.get("ce_pct_of_forward"), forward_ms=phases.get("forward_ms"))
    answer = row_answer(result.config.task)   # roster: the whole plan, not its day count
    if BASELINE in results:   # fidelity to vanilla: informative even where accuracy is not (a weak model)
        row.update(agreement_with(got, results[BASELINE].samples, "vanilla", answer))
    if cache != "none":
        twin = results.get((ctrl, ce, "none"))
        row.update(agreement_with(got, twin.samples if twin else None, "no_cache", answer))
    return row


def table_of(results: dict[tuple, experiments.RunResult], n: int, meta: dict) -> dict:
    """The table: ``meta`` and one row per run, with speedups over the baseline row."""
    rows = [table_row(name, r, n, results) for name, r in results.items()]
    base = next((r for r in rows if (r["controller"], r["ce"], r["cache"]) == BASELINE), None)
    for row in rows:
        row["speedup_tps"] = row["tps"] / base["tps"] if base and base["tps"] and row["tps"] else None
        row["speedup_nfe"] = base["nfe"] / row["nfe"] if base else None
    return dict(meta, rows=rows)


def devices(results: dict[tuple, experiments.RunResult]) -> str:
    """The machines the runs were computed on (their sidecars'; this one for runs computed now), in order."""
    return " + ".join(dict.fromkeys(r.device_name for r in results.values()))


# --------------------------------------------------------------------------------------------------------------
# The record: results/embedded_controllers.json and its runs in results/controller_table/, made row by row
# --------------------------------------------------------------------------------------------------------------
PATH = REPO_ROOT / "results" / "embedded_controllers.json"
RUNS = "controller_table"   # the runs' folder, beside the table


def runs_dir(path: str | Path | None = None) -> Path:
    """Where the runs of the table at ``path`` live: ``controller_table/`` beside it."""
    return Path(path or PATH).resolve().parent / RUNS


@dataclass(frozen=True)
class ControllerTable:
    """The stored table: its model, window, problem count and rows (each a dict as stored)."""
    model: str
    n: int
    gen_length: int | None
    rows: list[dict]
    path: Path

    def by_setting(self) -> dict[tuple, dict]:
        """(controller, ce, cache) -> row."""
        return {(r["controller"], r["ce"], r["cache"]): r for r in self.rows}

    def runs(self) -> dict[tuple, dict[str, dict]]:
        """(controller, ce, cache) -> {problem id: row} of each row's run."""
        folder = runs_dir(self.path)
        return {(r["controller"], r["ce"], r["cache"]): {x["id"]: x for x in ResultsFile(folder / f"{r['key']}.jsonl").load()}
                for r in self.rows}


def load(path: str | Path | None = None) -> ControllerTable:
    path = Path(path or PATH)
    data = read_json(path)
    return ControllerTable(data.get("model"), data["n"], data.get("gen_length"), data["rows"], path)


def load_dict(path: str | Path | None = None) -> dict:
    """The stored JSON itself (for :func:`markdown` and the tests that compare it whole)."""
    return read_json(path or PATH)


def save(table: dict, path: str | Path | None = None) -> Path:
    return write_json(path or PATH, table)


def make_table(configs: dict[tuple, experiments.RunConfig], out: Path, *, model: str, n: int, batch_size: int,
               command: str, log=print) -> dict:
    """Every row's run through the harness with phase timing (what is stored in the runs beside ``out`` is read
    back, only what is missing computed), each finished run packed and the table saved at ``out`` after each row;
    returns the table."""
    runs = runs_dir(out)   # mkdir: experiments.result
    first = next(iter(configs.values()))
    meta = dict(model=model, task=first.task, split="test", n=n, gen_length=first.gen_length,
                block_length=first.block_length, batch_size=batch_size, threads=torch.get_num_threads(),
                cpu_count=os.cpu_count(), torch=torch.__version__, baseline=slug(*BASELINE, sep="|"),
                command=command, revision=git_revision(), runs=portable_path(str(runs)),
                note="TPS = B * L_gen / T_wall over the harness's timed batches (each session's first batch is "
                     "its warm-up) on this machine; speedup over the baseline row of this file")
    results = {}
    for name, config in configs.items():
        results[name] = res = experiments.result(config, results_dir=runs, profile=True)
        if res.computed:
            log(f"{slug(*name, sep='|')}: {res.computed} problems computed, {res.reused} read back ({res.key})")
        ResultsFile(res.path).pack()   # a finished row's answers, gzipped: the table's 36 x 500 long texts
        table = table_of(results, n, dict(meta, device=devices(results)))
        save(table, out)
    return table


# --------------------------------------------------------------------------------------------------------------
# The record's tables
# --------------------------------------------------------------------------------------------------------------
OVERVIEW = (("vanilla", False), ("tspd", True), ("fast-dllm", False), ("credit", False), ("learn2pd", False))


def _fmt(value, spec: str, none: str = "–") -> str:
    return none if value is None else format(value, spec)


def markdown(table: dict) -> str:
    """The README's table: accuracy with its Wilson 95 % interval, NFE, TPS, speedup, overheads, agreement."""
    pct = lambda v: "–" if v is None else f"{100 * v:.0f} %"   # noqa: E731
    header = ["controller", "CE", "cache", "acc. (%) [95 % CI]", "NFE", "TPS", "speedup", "ctrl % of fwd",
              "CE % of fwd", "same answer as vanilla", "same answer as no cache", "same text as no cache"]
    rows = [[r["controller"], "on" if r["ce"] else "off", r["cache"],
             f"{100 * r['accuracy']:.1f} [{100 * r['accuracy_95'][0]:.1f}, {100 * r['accuracy_95'][1]:.1f}]",
             f"{r['nfe']:.1f}", _fmt(r["tps"], ".1f"), _fmt(r["speedup_tps"], ".2f"),
             _fmt(r["controller_pct_of_forward"], ".1f"), _fmt(r["ce_pct_of_forward"], ".1f"),
             pct(r.get("same_answer_as_vanilla")), pct(r.get("same_answer_as_no_cache")),
             pct(r.get("same_text_as_no_cache"))] for r in table["rows"]]
    return "\n".join(markdown_table(header, rows))


def console(table: dict) -> str:
    """A compact plain-text view of the table for the terminal."""
    lines = [f"{'controller':10s} {'ce':3s} {'cache':6s} {'acc':>6s} {'nfe':>6s} {'tps':>7s} {'x':>5s} {'ctrl%':>6s} "
             f"{'ce%':>6s} {'=van':>5s} {'chr=van':>7s} {'chr=nocache':>11s}"]
    for r in table["rows"]:
        lines.append(f"{r['controller']:10s} {'on' if r['ce'] else 'off':3s} {r['cache']:6s} {r['accuracy']:6.3f} "
                     f"{r['nfe']:6.1f} {_fmt(r['tps'], '7.1f', '      –')} {_fmt(r['speedup_tps'], '5.2f', '    –')} "
                     f"{_fmt(r['controller_pct_of_forward'], '6.2f', '     –')} "
                     f"{_fmt(r['ce_pct_of_forward'], '6.2f', '     –')} "
                     f"{_fmt(r.get('same_text_as_vanilla'), '5.2f', '    –')} "
                     f"{_fmt(r.get('char_agreement_with_vanilla'), '7.2f', '      –')} "
                     f"{_fmt(r.get('char_agreement_with_no_cache'), '11.2f', '')}")
    return "\n".join(lines)


def accuracy_cell(row: dict) -> str:
    """``98.4 % (96.9-99.2 %)``: a row's accuracy and its Wilson 95 % interval."""
    lo, hi = row["accuracy_95"]
    return f"{100 * row['accuracy']:.1f} % ({100 * lo:.1f}-{100 * hi:.1f} %)"


def overview_table(table: ControllerTable | None = None) -> str:
    """A row per controller of :data:`OVERVIEW`: accuracy and forwards a problem without a cache and with the dual
    one (a dash where the table lacks the row), the model and n in the header."""
    table = table or load()
    rows, out = table.by_setting(), []
    for controller, ce in OVERVIEW:
        cells = []
        for cache in ("none", "dual"):
            r = rows.get((controller, ce, cache))
            cells += ["-", "-"] if r is None else [accuracy_cell(r), f"{r['nfe']:.1f}"]
        out.append([display_name(controller, ce), *cells])
    window = f", window {table.gen_length}" if table.gen_length else ""
    header = [f"`{table.model or 'model not recorded'}`{window}, n = {table.n} each", "accuracy, no cache", "forwards",
              "accuracy, dual cache", "forwards"]
    return "\n".join(markdown_table(header, out))


class _Series:
    """A run's rows in a fixed problem order, shaped as the claims' bootstrap takes them."""

    def __init__(self, rows: dict[str, dict], ids: list[str]):
        self.samples = [rows[i] for i in ids]
        self.key = ""


def comparisons_table(seed: int = 0, table: ControllerTable | None = None) -> str:
    """Paired comparisons on the table's problems (95 % bootstrap intervals): each adaptive controller without a
    cache against vanilla (accuracy), TSPD + CE against Fast-dLLM (accuracy: the paper's central pair), each against
    TSPD + CE (forwards), CE's effect, and each cache's cost."""
    from tspd.book.claims.runs import fewer_forwards, more_accurate
    from tspd.book.claims.stats import number
    table = table or load()
    runs = table.runs()
    ids = sorted(set.intersection(*(set(r) for r in runs.values())))
    series = {k: _Series(v, ids) for k, v in runs.items()}

    def label(k):
        return display_name(k[0], k[1]) + ("" if k[2] == "none" else f", {k[2]} cache")

    def compare(how, a, b):
        return how({label(a): series[a], label(b): series[b]}, label(a), label(b), seed=seed)

    ours, vanilla, plain = ("tspd", True, "none"), BASELINE, ("tspd", False, "none")
    adaptive = [k for k in series if k[2] == "none" and not k[1] and k[0] not in ("vanilla", "tspd")]
    found = [compare(more_accurate, k, vanilla) for k in [ours, *adaptive]]
    fast = ("fast-dllm", False, "none")
    if fast in series:
        found.append(compare(more_accurate, ours, fast))
    found += [compare(fewer_forwards, ours, k) for k in adaptive]
    if plain in series:
        found.append(compare(fewer_forwards, ours, plain))
    found += [compare(more_accurate, k, (k[0], k[1], "none"))
              for k in series if k[2] != "none" and (k[1] == (k[0] == "tspd"))]
    rows = [[f.quantity, number(f.value), f"{number(f.lo)} to {number(f.hi)}", f.n] for f in found]
    return "\n".join(markdown_table([f"comparison on `{table.model}` (paired, same problems)", "value",
                                     "95 % interval", "n"], rows))


__all__ = ["CONTROLLERS", "CACHES", "BASELINE", "choices", "table_configs", "char_agreement", "agreement_with",
           "table_row", "table_of", "devices", "PATH", "RUNS", "runs_dir", "ControllerTable", "load", "load_dict", "save",
           "make_table", "OVERVIEW", "markdown", "console", "accuracy_cell", "overview_table", "comparisons_table"]
