"""Every controller, with and without CE, under each KV-cache mode, on the embedded model.

Writes ``results/embedded_controllers.json``: one row per (controller, CE, cache) with accuracy on N
held-out arith test problems, mean NFE per sample, TPS on this machine (B * L_gen / T_wall, paper
Appendix A.1), speedup over vanilla (no CE, no cache) measured in the same results file, the
controller's and CE's time per step as a percentage of one model forward (paper Section 5.4), the
fraction of answers identical to vanilla's (text and extracted number), and the agreement of each
cached configuration's answers with its no-cache twin.

Resumable: per-sample results are appended to ``<out>.samples.jsonl`` as each batch finishes, and
a rerun skips what is there; the summary JSON is rewritten after every batch. The full 500-problem
run takes hours on a CPU; start with ``--n 20``.

    .venv/bin/python scripts/controller_table.py --n 20
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tspd import DecodeConfig, load_model  # noqa: E402
from tspd.eval.tasks import arith  # noqa: E402
from tspd.decoding.controllers import Controller, make_controller  # noqa: E402
from tspd.decoding.extrapolate import make_extrapolator  # noqa: E402
from tspd.decoding.loop import CACHE_MODES, generate  # noqa: E402
from tspd.eval.results import wilson  # noqa: E402
from tspd.models.loading import decode_lengths  # noqa: E402
from tspd.provenance import device_name, git_revision  # noqa: E402

CONTROLLERS = {                      # row name -> (policy, kwargs): each method's default setting
    "vanilla": ("vanilla", {}),
    "fast-dllm": ("fast-dllm", {"threshold": 0.9}),
    "prophet": ("prophet", {}),
    "credit": ("credit", {"threshold": 0.9}),
    "learn2pd": ("learn2pd", {}),
    "tspd": ("tspd", {}),
}
CACHES = CACHE_MODES
BASELINE = ("vanilla", False, "none")


def key(ctrl: str, ce: bool, cache: str) -> str:
    return f"{ctrl}|ce={'on' if ce else 'off'}|cache={cache}"


def load_done(path: Path) -> dict[str, dict[str, dict]]:
    done: dict[str, dict[str, dict]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done.setdefault(r["config"], {})[r["id"]] = r
    return done


_INSTANCES: dict[str, Controller] = {}   # one controller per row, reused (learned ones load weights once)


def run_batch(model, problems, ctrl: str, ce: bool, cache: str, args) -> list[dict]:
    policy, kw = CONTROLLERS[ctrl]
    if ctrl not in _INSTANCES:
        _INSTANCES[ctrl] = make_controller(policy, **kw)
    decode = DecodeConfig(policy=_INSTANCES[ctrl], ce=make_extrapolator(True) if ce else False, cache=cache,
                          gen_length=args.gen_length, block_length=args.block_length)
    out = generate(model, [arith.prompt(p) for p in problems], decode, profile=True)   # times each phase
    per_sample = 1.0 / len(problems)        # batch-level timings are shared equally by its rows
    rows = []
    for i, p in enumerate(problems):
        pred = arith.extract_answer(out.texts[i])
        rows.append(dict(config=key(ctrl, ce, cache), id=p["id"], correct=pred == p["final"], pred=pred,
                         text=out.texts[i], nfe=out.nfe_per_sample[i], batch_nfe=out.nfe,
                         seconds=out.seconds * per_sample, forward_seconds=out.forward_seconds * per_sample,
                         controller_seconds=out.controller_seconds * per_sample,
                         ce_seconds=out.ce_seconds * per_sample, steps=out.nfe * per_sample,
                         batch=len(problems), gen_length=args.gen_length))
    return rows


def char_agreement(a: str, b: str) -> float:
    """Fraction of positions (over the longer text) where two answers have the same character."""
    n = max(len(a), len(b))
    return 1.0 if n == 0 else sum(x == y for x, y in zip(a, b)) / n


def summarise(done: dict[str, dict[str, dict]], ids: list[str], meta: dict) -> dict:
    rows = []
    base = None
    for ctrl in CONTROLLERS:
        for ce in (False, True):
            for cache in CACHES:
                k = key(ctrl, ce, cache)
                got = [done[k][i] for i in ids if i in done.get(k, {})]
                if not got:
                    continue
                n = len(got)
                secs, fwd = sum(r["seconds"] for r in got), sum(r["forward_seconds"] for r in got)
                steps = sum(r["steps"] for r in got)
                per_fwd = fwd / max(steps, 1e-12)
                correct = sum(r["correct"] for r in got)
                row = dict(controller=ctrl, ce=ce, cache=cache, n=n, complete=n == len(ids),
                           accuracy=correct / n, accuracy_95=wilson(correct, n),
                           nfe=sum(r["nfe"] for r in got) / n,
                           tps=n * got[0]["gen_length"] / secs,
                           seconds_per_sample=secs / n,
                           controller_pct_of_forward=100 * sum(r["controller_seconds"] for r in got) / steps / per_fwd,
                           ce_pct_of_forward=100 * sum(r["ce_seconds"] for r in got) / steps / per_fwd,
                           forward_ms=1000 * per_fwd)
                van = done.get(key(*BASELINE), {})
                pairs = [(r, van[r["id"]]) for r in got if r["id"] in van]
                if pairs:   # fidelity to vanilla: informative even where accuracy is not (a weak model)
                    row["same_text_as_vanilla"] = sum(a["text"] == b["text"] for a, b in pairs) / len(pairs)
                    row["same_answer_as_vanilla"] = sum(a["pred"] == b["pred"] for a, b in pairs) / len(pairs)
                    row["char_agreement_with_vanilla"] = sum(char_agreement(a["text"], b["text"])
                                                             for a, b in pairs) / len(pairs)
                twin = done.get(key(ctrl, ce, "none"), {})
                if cache != "none":
                    pairs = [(r, twin[r["id"]]) for r in got if r["id"] in twin]
                    row["same_text_as_no_cache"] = (sum(a["text"] == b["text"] for a, b in pairs) / len(pairs)
                                                    if pairs else None)
                    row["same_answer_as_no_cache"] = (sum(a["pred"] == b["pred"] for a, b in pairs) / len(pairs)
                                                      if pairs else None)
                    row["char_agreement_with_no_cache"] = (sum(char_agreement(a["text"], b["text"])
                                                               for a, b in pairs) / len(pairs) if pairs else None)
                rows.append(row)
                if (ctrl, ce, cache) == BASELINE:
                    base = row
    for row in rows:
        row["speedup_tps"] = row["tps"] / base["tps"] if base else None
        row["speedup_nfe"] = base["nfe"] / row["nfe"] if base else None
    return dict(meta, rows=rows)


def markdown(table: dict) -> str:
    """The README's table: accuracy with its Wilson 95 % interval, NFE, TPS, speedup, overheads, agreement."""
    pct = lambda v: "–" if v is None else f"{100 * v:.0f} %"   # noqa: E731
    lines = ["| controller | CE | cache | acc. (%) [95 % CI] | NFE | TPS | speedup | ctrl % of fwd | CE % of fwd "
             "| same answer as vanilla | same answer as no cache | same text as no cache |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table["rows"]:
        lo, hi = r["accuracy_95"]
        lines.append(f"| {r['controller']} | {'on' if r['ce'] else 'off'} | {r['cache']} | {100 * r['accuracy']:.1f} "
                     f"[{100 * lo:.1f}, {100 * hi:.1f}] | {r['nfe']:.1f} | {r['tps']:.1f} | {r['speedup_tps'] or 0:.2f} "
                     f"| {r['controller_pct_of_forward']:.1f} | {r['ce_pct_of_forward']:.1f} "
                     f"| {pct(r.get('same_answer_as_vanilla'))} | {pct(r.get('same_answer_as_no_cache'))} "
                     f"| {pct(r.get('same_text_as_no_cache'))} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", default="tiny-arith")
    ap.add_argument("--n", type=int, default=500, help="held-out arith test problems")
    ap.add_argument("--gen-length", type=int, default=None, help="default: the checkpoint's own")
    ap.add_argument("--block-length", type=int, default=None, help="default: the checkpoint's own")
    ap.add_argument("--batch-size", type=int, default=1, help="1 = the paper's setting (Appendix A.1)")
    ap.add_argument("--controllers", default=",".join(CONTROLLERS))
    ap.add_argument("--caches", default=",".join(CACHES))
    ap.add_argument("--ce", default="off,on")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    ap.add_argument("--out", default=str(ROOT / "results" / "embedded_controllers.json"))
    ap.add_argument("--markdown", action="store_true", help="print the stored table as Markdown and exit")
    args = ap.parse_args()
    if args.markdown:
        print(markdown(json.loads(Path(args.out).read_text())))
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    samples = out.with_suffix(".samples.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    model = load_model(args.model)
    own = decode_lengths(model)
    args.gen_length, args.block_length = args.gen_length or own[0], args.block_length or own[1]
    problems = arith.load_split("test", args.n)
    ids = [p["id"] for p in problems]
    done = load_done(samples)
    meta = dict(model=args.model, split="test", n=args.n, gen_length=args.gen_length, block_length=args.block_length,
                batch_size=args.batch_size, threads=torch.get_num_threads(), cpu_count=os.cpu_count(),
                torch=torch.__version__, baseline=key(*BASELINE), command=" ".join(["python", *sys.argv]),
                revision=git_revision(), device=device_name("cpu"),
                note="TPS = B * L_gen / T_wall on this machine; speedup over the baseline row of this file")
    generate(model, [problems[0]["question"]], gen_length=args.block_length, block_length=args.block_length)  # warm-up
    ctrls = [c for c in args.controllers.split(",") if c]
    configs = [(c, ce == "on", cache) for c in ctrls for ce in args.ce.split(",") for cache in args.caches.split(",")]
    if BASELINE not in configs:
        configs.insert(0, BASELINE)
    for ctrl, ce, cache in configs:
        todo = [p for p in problems if p["id"] not in done.get(key(ctrl, ce, cache), {})]
        t0 = time.perf_counter()
        for i in range(0, len(todo), args.batch_size):
            rows = run_batch(model, todo[i:i + args.batch_size], ctrl, ce, cache, args)
            with samples.open("a") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
                    done.setdefault(r["config"], {})[r["id"]] = r
            out.write_text(json.dumps(summarise(done, ids, meta), indent=1) + "\n")
        if todo:
            print(f"{key(ctrl, ce, cache)}: {len(todo)} problems in {time.perf_counter() - t0:.0f}s", flush=True)
    table = summarise(done, ids, meta)
    out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{'controller':10s} {'ce':3s} {'cache':6s} {'acc':>6s} {'nfe':>6s} {'tps':>7s} {'x':>5s} {'ctrl%':>6s} "
          f"{'ce%':>6s} {'=van':>5s} {'chr=van':>7s} {'chr=nocache':>11s}")
    for r in table["rows"]:
        nc = r.get("char_agreement_with_no_cache")
        print(f"{r['controller']:10s} {'on' if r['ce'] else 'off':3s} {r['cache']:6s} {r['accuracy']:6.3f} {r['nfe']:6.1f} "
              f"{r['tps']:7.1f} {r['speedup_tps'] or 0:5.2f} {r['controller_pct_of_forward']:6.2f} "
              f"{r['ce_pct_of_forward']:6.2f} {r.get('same_text_as_vanilla', float('nan')):5.2f} "
              f"{r.get('char_agreement_with_vanilla', float('nan')):7.2f} {'' if nc is None else f'{nc:11.2f}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
