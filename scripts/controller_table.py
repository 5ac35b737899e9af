"""Every controller, with and without CE, under each KV-cache mode, on the embedded model.

Each (controller, CE, cache) row is one :class:`tspd.eval.experiments.RunConfig`, built as the
notebooks build each method's default setting (``tspd.book.base_run`` + ``method_config``), and run
through the one evaluation harness with phase timing (``experiments.result(..., profile=True)``). Its
files (``<key>.jsonl`` rows, ``<key>.summary.json``, ``<key>.json`` sidecar) live in the table's own
results directory, ``controller_table/`` beside ``--out``, so every row is measured by this command
on one machine; a rerun reads back what is there and computes only what is missing (resumable).

Writes ``--out`` (``results/embedded_controllers.json``): one row per (controller, CE, cache) with
accuracy on N held-out test problems of the model's own task (Wilson 95 % interval), mean NFE per sample, TPS on this
machine (B * L_gen / T_wall over the harness's timed batches, paper Appendix A.1), speedup over
vanilla (no CE, no cache) measured in the same directory, the controller's and CE's time per step as a
percentage of one model forward (paper Section 5.4), the fraction of answers identical to vanilla's
(text and extracted number), and the agreement of each cached configuration's answers with its
no-cache twin. The full 500-problem run takes about 40 minutes on a 2-core CPU; start with ``--n 20``.

    .venv/bin/python scripts/controller_table.py --n 20
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tspd.book.notebook import base_run, method_config  # noqa: E402
from tspd.decoding.config import DecodeConfig  # noqa: E402
from tspd.eval import experiments  # noqa: E402
from tspd.eval.results import phase_shares, wilson  # noqa: E402
from tspd.models.loading import DEFAULT_MODEL  # noqa: E402
from tspd.options import add_dataclass_arguments  # noqa: E402
from tspd.provenance import git_revision, portable  # noqa: E402
from tspd.validate import CACHE_MODES, UsageError  # noqa: E402

# row name -> the tspd.book.METHODS row whose decoding it uses (its policy at the method's default
# setting: Fast-dLLM and Credit Decoding threshold 0.9, the controllers' own default; the learned
# tspd / learn2pd controllers load the weights shipped beside the embedded model, <model>/controllers/)
CONTROLLERS = {"vanilla": "Vanilla", "fast-dllm": "F-dLLM", "prophet": "Prophet †", "credit": "CD",
               "learn2pd": "Learn2PD †", "tspd": "Ours †"}
CACHES = CACHE_MODES
BASELINE = ("vanilla", False, "none")


def key(ctrl: str, ce: bool, cache: str) -> str:
    """A row's name in the table: ``fast-dllm|ce=on|cache=dual``."""
    return f"{ctrl}|ce={'on' if ce else 'off'}|cache={cache}"


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
    return {(c, ce, cache): method_config(base, CONTROLLERS[c], ce=ce, cache=cache) for c, ce, cache in rows}


def char_agreement(a: str, b: str) -> float:
    """Fraction of positions (over the longer text) where two answers have the same character."""
    n = max(len(a), len(b))
    return 1.0 if n == 0 else sum(x == y for x, y in zip(a, b)) / n


def agreement(rows: list[dict], ref: list[dict] | None, name: str) -> dict:
    """Same text, same extracted answer and character agreement with ``ref``'s rows of the same ids
    (fields ``same_text_as_<name>``, ...); None where no id is shared."""
    by_id = {r["id"]: r for r in ref or []}
    pairs = [(r, by_id[r["id"]]) for r in rows if r["id"] in by_id]
    mean = lambda f: sum(f(a, b) for a, b in pairs) / len(pairs) if pairs else None  # noqa: E731
    return {f"same_text_as_{name}": mean(lambda a, b: a["output"] == b["output"]),
            f"same_answer_as_{name}": mean(lambda a, b: a["extracted"] == b["extracted"]),
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
    if BASELINE in results:   # fidelity to vanilla: informative even where accuracy is not (a weak model)
        row.update(agreement(got, results[BASELINE].samples, "vanilla"))
    if cache != "none":
        twin = results.get((ctrl, ce, "none"))
        row.update(agreement(got, twin.samples if twin else None, "no_cache"))
    return row


def summarise(results: dict[tuple, experiments.RunResult], n: int, meta: dict) -> dict:
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


def fmt(value, spec: str, none: str = "–") -> str:
    """``value`` formatted with ``spec``, or ``none`` where it is missing (rows without phase times)."""
    return none if value is None else format(value, spec)


def markdown(table: dict) -> str:
    """The README's table: accuracy with its Wilson 95 % interval, NFE, TPS, speedup, overheads, agreement."""
    pct = lambda v: "–" if v is None else f"{100 * v:.0f} %"   # noqa: E731
    lines = ["| controller | CE | cache | acc. (%) [95 % CI] | NFE | TPS | speedup | ctrl % of fwd | CE % of fwd "
             "| same answer as vanilla | same answer as no cache | same text as no cache |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table["rows"]:
        lo, hi = r["accuracy_95"]
        lines.append(f"| {r['controller']} | {'on' if r['ce'] else 'off'} | {r['cache']} | {100 * r['accuracy']:.1f} "
                     f"[{100 * lo:.1f}, {100 * hi:.1f}] | {r['nfe']:.1f} | {fmt(r['tps'], '.1f')} "
                     f"| {fmt(r['speedup_tps'], '.2f')} | {fmt(r['controller_pct_of_forward'], '.1f')} "
                     f"| {fmt(r['ce_pct_of_forward'], '.1f')} | {pct(r.get('same_answer_as_vanilla'))} "
                     f"| {pct(r.get('same_answer_as_no_cache'))} | {pct(r.get('same_text_as_no_cache'))} |")
    return "\n".join(lines)


def console(table: dict) -> str:
    """A compact plain-text view of the table for the terminal."""
    lines = [f"{'controller':10s} {'ce':3s} {'cache':6s} {'acc':>6s} {'nfe':>6s} {'tps':>7s} {'x':>5s} {'ctrl%':>6s} "
             f"{'ce%':>6s} {'=van':>5s} {'chr=van':>7s} {'chr=nocache':>11s}"]
    for r in table["rows"]:
        lines.append(f"{r['controller']:10s} {'on' if r['ce'] else 'off':3s} {r['cache']:6s} {r['accuracy']:6.3f} "
                     f"{r['nfe']:6.1f} {fmt(r['tps'], '7.1f', '      –')} {fmt(r['speedup_tps'], '5.2f', '    –')} "
                     f"{fmt(r['controller_pct_of_forward'], '6.2f', '     –')} "
                     f"{fmt(r['ce_pct_of_forward'], '6.2f', '     –')} "
                     f"{fmt(r.get('same_text_as_vanilla'), '5.2f', '    –')} "
                     f"{fmt(r.get('char_agreement_with_vanilla'), '7.2f', '      –')} "
                     f"{fmt(r.get('char_agreement_with_no_cache'), '11.2f', '')}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (the same options as before the table went through the harness)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL, help="embedded model name or checkpoint directory; its runs "
                    "decode the task it was trained on")
    ap.add_argument("--n", type=int, default=500, help="held-out test problems of the model's task")
    add_dataclass_arguments(ap, DecodeConfig, only=("gen_length", "block_length"))
    ap.add_argument("--batch-size", type=int, default=1, help="1 = the paper's setting (Appendix A.1)")
    ap.add_argument("--controllers", default=",".join(CONTROLLERS))
    ap.add_argument("--caches", default=",".join(CACHES))
    ap.add_argument("--ce", default="off,on")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    ap.add_argument("--out", default=str(ROOT / "results" / "embedded_controllers.json"),
                    help="the table; the runs go to controller_table/ beside it")
    ap.add_argument("--markdown", action="store_true", help="print the stored table as Markdown and exit")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = sys.argv if argv is None else ["scripts/controller_table.py", *argv]
    out = Path(args.out)
    if args.markdown:
        print(markdown(json.loads(out.read_text())))
        return 0
    if args.n < 1 or args.batch_size < 1 or (args.threads is not None and args.threads < 1):
        raise UsageError("--n, --batch-size and --threads must be >= 1")
    if args.threads:
        torch.set_num_threads(args.threads)
    configs = table_configs(args)
    runs_dir = out.resolve().parent / "controller_table"   # mkdir: experiments.result
    first = next(iter(configs.values()))
    meta = dict(model=args.model, task=first.task, split="test", n=args.n, gen_length=first.gen_length,
                block_length=first.block_length, batch_size=args.batch_size, threads=torch.get_num_threads(),
                cpu_count=os.cpu_count(), torch=torch.__version__, baseline=key(*BASELINE),
                command=" ".join(["python", *command]), revision=git_revision(),
                runs=portable({"d": str(runs_dir)})["d"],
                note="TPS = B * L_gen / T_wall over the harness's timed batches (each session's first batch is "
                     "its warm-up) on this machine; speedup over the baseline row of this file")
    results = {}
    for name, config in configs.items():
        results[name] = res = experiments.result(config, results_dir=runs_dir, profile=True)
        if res.computed:
            print(f"{key(*name)}: {res.computed} problems computed, {res.reused} read back ({res.key})", flush=True)
        table = summarise(results, args.n, dict(meta, device=devices(results)))
        out.write_text(json.dumps(table, indent=1) + "\n")
    print(console(table))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, FileNotFoundError) as e:   # UsageError, a missing checkpoint or table: one line
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
