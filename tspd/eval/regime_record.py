"""``python -m tspd regime``: a checkpoint's regime record, beside LLaDA-8B's anchors.

Measures :func:`tspd.eval.regime.regime_figures` on held-out problems of the task the checkpoint was
trained on (its ``config.json`` names it) and writes ``regime.json`` into the checkpoint directory (or
``--out``), with the command, revision and device, one row per decoding with which problems it answered,
and the targets the regime model is held to. Each row is written as soon as it is measured, keyed by the
weights' hash, so an interrupted record rerun on the same checkpoint measures only what is missing. The
record is also written as a section of the checkpoint's ``TRAINING.md``.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path

from tspd.decoding.names import slug
from tspd.eval.regime import (ANCHORS, CACHE_ANCHORS, FIXED_ANCHORS, THRESHOLD_ANCHOR, RegimeConfig, decodings,
                               paired_gap, score)
from tspd.eval.results import wilson
from tspd.models.loading import DEFAULT_MODEL, task_spec, weights_hash
from tspd.provenance import device_name, git_revision
from tspd.records import regime
from tspd.validate import UsageError

SECTION = "## Regime record"
# What a row's figures depend on (a fixed schedule's k is in its name, so adding one only adds a row).
ROW_SETTINGS = ("n", "long_n", "threshold", "batch")
# What the coupled-answers model is held to: (bound, "min" or "max", figure). A loss or cost is in points of
# accuracy against vanilla (or against the same decoder without a cache, or at the checkpoint's window).
REGIME_TARGETS = {"vanilla": (90.0, "min", "vanilla accuracy, %"), "fast_tpf": (1.5, "min", "Fast-dLLM 0.9 TPF"),
                  "fast_loss": (2.0, "max", "Fast-dLLM 0.9 loses, points"),
                  "fixed_loss": (8.0, "min", "4 tokens per step loses, points"),
                  "fixed8_loss": (25.0, "min", "8 tokens per step loses, points"),
                  "block_step_loss": (40.0, "min", "one step per block loses, points"),
                  "cache_cost": (2.0, "max", "largest cost of a cache, points"),
                  "long_gap": (3.0, "max", "largest vanilla loss in a longer window, points")}
FIXED_TARGETS = {4: "fixed_loss", 8: "fixed8_loss"}   # the fixed schedules held to a bound
# the decoders whose cost of each cache is a target, as (policy, CE): vanilla, Fast-dLLM, TSPD + CE (their rows are
# named by slug(..., sep="_"): fast, fast_dual)
CACHED = (("vanilla", False), ("fast-dllm", False), ("tspd", True))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=DEFAULT_MODEL, help="a checkpoint directory or zoo name trained by train-lm")
    p.add_argument("--n", type=int, default=500, help="test problems for the window's own figures")
    p.add_argument("--long-n", type=int, default=100, help="test problems for the longer windows (vanilla: costly)")
    p.add_argument("--long-windows", default="512", help="comma-separated longer windows, e.g. 512,1024 ('' for none)")
    p.add_argument("--tspd-ce", choices=("auto", "yes", "no"), default="auto",
                   help="TSPD + CE rows: auto = when the model has controllers/tspd")
    p.add_argument("--batch", type=int, default=100, help="prompts per generate() call")
    p.add_argument("--out", default=None, help="the record's JSON (default: <model>/regime.json)")


def measure(model, task, cfg: RegimeConfig, out: Path, meta: dict, log=print) -> dict:
    """Every row of :func:`decodings` (and the longer windows' paired baseline) into ``out``, resumably."""
    gen_length, block_length = meta["gen_length"], meta["block_length"]
    before = json.loads(out.read_text()) if out.is_file() else {}
    settings = json.loads(json.dumps(asdict(cfg)))   # as stored (tuples become lists)
    problems = task.load_split("test", max(cfg.n, cfg.long_n))
    plan = decodings(cfg, gen_length, block_length)
    if cfg.long_windows:
        from tspd.decoding.config import DecodeConfig
        plan.append(("vanilla_short", DecodeConfig.of(gen_length=gen_length, block_length=block_length), True))
    # a stored row stays valid while the weights and what its figures depend on stay; the other settings
    # (TSPD + CE, the caches, the longer windows) only add or drop rows, so adding 1024 measures only 1024
    kept = before.get("weights") == meta["weights"] and \
        all((before.get("config") or {}).get(k) == settings[k] for k in ROW_SETTINGS)
    rows = {name: row for name, row in before.get("rows", {}).items() if name in {n for n, _, _ in plan}} if kept else {}
    missing = [name for name, _, _ in plan if name not in rows]
    record = {**meta, **measured_by(before if rows else {}, meta, bool(missing)), "config": settings, "rows": rows}
    for name, decode, long in plan:
        if name in record["rows"]:
            continue
        t0 = time.time()
        chosen = problems[:cfg.long_n] if long else problems[:cfg.n]
        row = {k: v for k, v in score(model, task, chosen, decode, cfg.batch).items() if k != "texts"}
        row["seconds"] = round(time.time() - t0, 1)
        record["rows"][name] = row
        out.write_text(json.dumps(record, indent=1) + "\n")
        log(f"regime {name}: {row['correct']}/{row['n']}, TPF {row['tpf']:.2f}, {row['seconds']} s")
    order = [name for name, _, _ in plan]   # rows added to a kept record take their place in the plan
    if list(record["rows"]) != order:
        record["rows"] = {name: record["rows"][name] for name in order}
        out.write_text(json.dumps(record, indent=1) + "\n")
    return record


def measured_by(kept: dict, new: dict, measuring: bool) -> dict:
    """Who measured a record's rows: ``new``'s command, revision and device where no row is kept, the kept
    record's where nothing is measured, and both where rows are added to kept ones."""
    fields = ("command", "git", "device")
    if not kept.get("rows") or any(f not in kept for f in fields):
        return {f: new[f] for f in fields}
    if not measuring:
        return {f: kept[f] for f in fields}
    both = lambda f, word: kept[f] if kept[f] == new[f] else f"{kept[f]}; rows added {word} {new[f]}"   # noqa: E731
    return {"command": new["command"], "git": both("git", "at"), "device": both("device", "on")}


def targets(record: dict) -> list[dict]:
    """Each target of :data:`REGIME_TARGETS` with the measured value, its 95 % interval and whether it is met
    (a bound is met only when the whole interval is on its side; a cost's interval is paired)."""
    rows = record["rows"]
    out = []

    def add(key, what, value, lo, hi, anchor=None, **about):
        """``about``: what the row measures, for readers of the list (cache, decoder: its row's name, and its policy
        and ce; window, tokens_per_step)."""
        bound, kind, label = REGIME_TARGETS[key]
        met = (lo >= bound) if kind == "min" else (hi <= bound)
        out.append({"target": key, "what": what or label, "value": value, "lo": lo, "hi": hi, "bound": bound,
                    "kind": kind, "met": met, "point_met": value >= bound if kind == "min" else value <= bound,
                    "anchor": anchor, **about})

    v = rows["vanilla"]
    lo, hi = wilson(v["correct"], v["n"])
    add("vanilla", None, 100 * v["accuracy"], 100 * lo, 100 * hi)
    add("fast_tpf", None, rows["fast"]["tpf"], rows["fast"]["tpf"], rows["fast"]["tpf"], ANCHORS["fast_tpf"])
    add("fast_loss", None, *paired_gap(v["right"], rows["fast"]["right"]),
        (round(FIXED_ANCHORS[1] - THRESHOLD_ANCHOR[0], 1), "Fast-dLLM paper, Fig. 5 (read from the plot)"))
    for k, key in FIXED_TARGETS.items():
        if f"fixed{k}" in rows:
            add(key, None, *paired_gap(v["right"], rows[f"fixed{k}"]["right"]),
                (round(FIXED_ANCHORS[1] - FIXED_ANCHORS[k], 1), "Fast-dLLM paper, Fig. 5 (read from the plot)"),
                tokens_per_step=k)
    if "block_step" in rows:
        add("block_step_loss", None, *paired_gap(v["right"], rows["block_step"]["right"]),
            tokens_per_step=record["block_length"])
    for policy, ce in CACHED:
        base = slug(policy, ce, sep="_")
        for cache in record["config"]["caches"]:
            cached = slug(policy, ce, cache, sep="_")
            if cached in rows and base in rows:
                add("cache_cost", f"the {cache} cache costs {base}, points",
                    *paired_gap(rows[base]["right"], rows[cached]["right"]), CACHE_ANCHORS.get((policy, ce, cache)),
                    cache=cache, decoder=base, policy=policy, ce=ce)
    for w in record["config"]["long_windows"]:
        if f"vanilla_{w}" in rows:
            add("long_gap", f"vanilla at {w} loses against {record['gen_length']}, points",
                *paired_gap(rows["vanilla_short"]["right"], rows[f"vanilla_{w}"]["right"]), ANCHORS["long_window_gap"],
                window=int(w))
    return out


def markdown(record: dict) -> list[str]:
    """The record as a TRAINING.md section: every row, then the targets beside LLaDA-8B's anchors."""
    lines = [SECTION, "", f"`{record['command']}` (revision {record['git']}, {record['device']}); window "
             f"{record['gen_length']} / block {record['block_length']}; `regime.json` holds every row.", "",
             "| decoding | accuracy (95 % interval) | n | TPF | forwards (batch max) |", "|---|---|---|---|---|"]
    for name, r in record["rows"].items():
        lo, hi = wilson(r["correct"], r["n"])
        lines.append(f"| {name} | {r['accuracy']:.1%} ({lo:.1%}-{hi:.1%}) | {r['n']} | {r['tpf']:.2f} | {r['nfe']} |")
    lines += ["", "| target | ours (95 % interval) | bound | met | LLaDA-8B-Instruct (their numbers) |",
              "|---|---|---|---|---|"]
    for t in targets(record):
        a = t["anchor"]
        sign = "" if t["target"] == "vanilla" else "+"
        interval = "" if t["lo"] == t["hi"] else f" ({t['lo']:{sign}.1f} to {t['hi']:{sign}.1f})"
        met = "yes" if t["met"] else ("point only" if t["point_met"] else "no")
        lines.append(f"| {t['what']} | {t['value']:.2f}{interval} | {'>=' if t['kind'] == 'min' else '<='} "
                     f"{t['bound']:g} | {met} | {f'{a[0]:g}: {a[1]}' if a else ''} |")
    return lines + [""]


def write_section(training_md: Path, lines: list[str]) -> None:
    """Put ``lines`` into ``TRAINING.md`` in place of its regime section (appended when there is none)."""
    text = training_md.read_text() if training_md.is_file() else ""
    body = "\n".join(lines) + "\n"
    start = text.find(SECTION)
    if start < 0:
        training_md.write_text(text.rstrip("\n") + "\n\n" + body if text else body)
        return
    later = text.find("\n## ", start + len(SECTION))
    training_md.write_text(text[:start] + body + ("\n" + text[later + 1:] if later >= 0 else ""))


def main(args: argparse.Namespace) -> int:
    from tspd.eval.tasks.generated import generated_task
    from tspd.models.loading import Checkpoint, load_model

    checkpoint = Checkpoint.open(args.model)
    path, spec = checkpoint.path, task_spec(checkpoint)
    if not spec:
        raise UsageError(f"{path} names no generated task in config.json (train it with train-lm)")
    task = generated_task(spec["name"])
    windows = tuple(int(w) for w in args.long_windows.split(",") if w.strip())
    has_tspd = (path / "controllers" / "tspd.json").is_file()
    if args.tspd_ce == "yes" and not has_tspd:
        raise UsageError(f"--tspd-ce yes, but {path}/controllers has no tspd controller")
    cfg = RegimeConfig(n=args.n, long_n=args.long_n, long_windows=windows, batch=args.batch,
                       tspd_ce=args.tspd_ce == "yes" or (args.tspd_ce == "auto" and has_tspd))
    model = load_model(checkpoint)
    meta = {"command": shlex.join(["python", "-m", "tspd", *sys.argv[1:]]) if sys.argv[1:] else "python -m tspd regime",
            "git": git_revision() or "unknown", "device": device_name(model.device), "model": str(args.model),
            "weights": weights_hash(checkpoint), "task": spec["name"], "gen_length": spec["gen_length"],
            "block_length": spec["block_length"]}
    out = Path(args.out) if args.out else regime.path_of(path)
    record = measure(model, task, cfg, out, meta, log=lambda s: print(s, flush=True))
    write_section(path / "TRAINING.md", markdown(record))
    for t in targets(record):
        print(f"{t['what']}: {t['value']:.2f} (bound {t['bound']:g}) {'met' if t['met'] else 'not met'}")
    return 0
