"""What a decoding step costs beyond its forward (paper Section 5.4): ``python -m tspd bench-loop``
(:mod:`tspd.commands.bench_loop`), and its record ``results/bench/loop-<device>.json`` with the table read from it.

Section 5.4 prices the controller and CE as a fraction of one forward. This measures the whole loop
that way on a real checkpoint (the embedded model by default) and its own task's held-out prompts, at
batch 1, for each controller, with and without CE, and for each cache:

1. an untimed decoding of each prompt records the forwards the loop ran (each window, its cache use);
2. then, prompt by prompt and repetition by repetition, the whole ``generate`` call is timed and so is
   a bare replay of the same forwards (the same windows through the same kind of cache, nothing else),
   the two alternating which goes first;
3. "the rest" of a step is (generate time - bare forward time) / bare forward time: statistics, history,
   CE, the controller, the commit and the call's own setup (canvas, controller, texts), as a fraction of
   the forwards. Each prompt's time is its fastest repetition, on either side (other work on the machine
   only ever adds time), summed over the prompts; the median over the (repetition, prompt) pairs of
   their own ratio is reported beside it. One ``profile=True`` decoding per prompt splits the step's
   own work by phase (statistics, view and commit; CE; the controller), without the call's setup, and
   times the forwards inside the loop (``forward_in_loop_of_bare``: the same forwards, but between the
   loop's steps rather than back to back).

"The rest" also holds what interleaving costs: on a small model the step's work and the forward evict
each other's data from the CPU caches, so a forward inside the loop runs a few per cent slower than in the
bare replay, and the step's own work slower than it would alone (measured on the embedded model, 1
thread: forwards ~3 % slower, the step's work ~1.6 times its time in a loop without forwards).

Both sides of each ratio run in the same process within milliseconds of each other, so a machine that
other work slows down slows both; absolute times are reported too, but only the ratios are results.

The record (the last section): ``python -m tspd bench-loop --out results/bench/loop-{device}.json`` writes one
``results/bench/loop-<device>.json`` per machine (rows per controller, CE and cache; :func:`save`, read by
:func:`load`); :func:`overhead_table` is the status page's table of every machine's file, and the step-speed page
reads the files through :mod:`tspd.book.loop_speed`.
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from tspd.decoding.config import DecodeConfig
from tspd.decoding.loop import generate
from tspd.decoding.names import display_name, slug
from tspd.markdown import table as markdown_table
from tspd.models.loading import LoadedModel, load_model, task_spec
from tspd.provenance import REPO_ROOT, device_name, git_revision
from tspd.records.device_files import write_device_file
from tspd.records.files import read_json, shown
from tspd.validate import CACHE_MODES, UsageError

# what the loop may spend beyond its forwards, as a fraction of a forward, per (controller, CE), on the embedded model
# (CPU, 1 thread, batch 1); a results file stores them as its "targets", a row as its "target"
OVERHEAD_BUDGETS = {("vanilla", False): 0.05, ("fast-dllm", False): 0.05, ("tspd", True): 0.15}


def recorded_forwards(model: LoadedModel, ids: list[int], config: DecodeConfig) -> list:
    """The forwards one decoding of ``ids`` runs: [(window ids, keyword arguments, cached)], recorded by a forward
    pre-hook on the network (the CUDA-graph path off, so that every forward is a call)."""
    calls = []

    def record(module, args, kwargs):
        kw = dict(kwargs)
        window = args[0] if args else kw.pop("input_ids")
        calls.append((window.clone(), {k: v for k, v in kw.items() if k != "cache"}, kw.get("cache") is not None))

    handle = model.module.register_forward_pre_hook(record, with_kwargs=True)
    try:
        generate(dataclasses.replace(model, graphs=None), [ids], config)
    finally:
        handle.remove()
    return calls


def replay_forwards(model: LoadedModel, calls: list) -> None:
    """The recorded forwards again, bare: one fresh cache per decoding, as the loop makes."""
    cache = model.new_cache() if any(cached for _, _, cached in calls) else None
    with torch.no_grad():
        for ids, kw, cached in calls:
            model(ids, cache=cache if cached else None, **kw)


def prompts(model: LoadedModel, n: int, length: int, seed: int = 0) -> tuple[list[list[int]], str]:
    """``n`` prompts as token ids: the test split of the task a ``train-lm`` checkpoint names, else random ids."""
    spec = task_spec(model)
    if spec and model.tokenizer is not None:
        from tspd.tasks.generated import generated_task
        task = generated_task(spec["name"])
        texts = [task.prompt(p) for p in task.load_split("test", n)]
        ids = [model.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        return ids, f"{spec['name']} test split, first {n}"
    g = torch.Generator().manual_seed(seed)
    hi = min(model.config.vocab_size, model.special.mask, model.special.eos)
    return [torch.randint(0, hi, (length,), generator=g).tolist() for _ in range(n)], f"{n} random prompts of {length} ids"


def controller_kwargs(model: LoadedModel, controller: str, threshold: float) -> tuple[dict, str | None]:
    """A controller's settings for the bench, and a note where its controller is a stand-in."""
    if controller == "fast-dllm":
        return {"threshold": threshold}, None
    if controller == "tspd" and not (model.path and (Path(model.path) / "controllers" / "tspd.json").is_file()):
        from tspd.decoding.controllers.tspd import TSPDConfig, TSPDNet
        torch.manual_seed(0)
        return {"net": TSPDNet(TSPDConfig())}, "random TSPD weights of the paper's shape (no trained controller)"
    return {}, None


def measure_setting(model: LoadedModel, ids: list[list[int]], config: DecodeConfig, repeats: int) -> dict:
    """One (controller, CE, cache) setting: the rest of a step as a fraction of its forwards, and the phases."""
    calls = [recorded_forwards(model, p, config) for p in ids]
    nfe = sum(len(c) for c in calls)
    ratios, best = [], {"loop": [float("inf")] * len(ids), "bare": [float("inf")] * len(ids)}
    for r in range(repeats):
        for k, (p, c) in enumerate(zip(ids, calls)):
            runs = {"loop": lambda: generate(model, [p], config), "bare": lambda: replay_forwards(model, c)}
            took = {}
            for name in ("loop", "bare") if (r + k) % 2 == 0 else ("bare", "loop"):
                t0 = time.perf_counter()
                runs[name]()
                took[name] = time.perf_counter() - t0
                best[name][k] = min(best[name][k], took[name])
            ratios.append((took["loop"] - took["bare"]) / took["bare"])
    loop_s, bare_s = sum(best["loop"]), sum(best["bare"])
    profiled = [generate(model, [p], config, profile=True) for p in ids]
    forward = sum(o.forward_seconds for o in profiled)
    phases = {"ce": sum(o.ce_seconds for o in profiled), "controller": sum(o.controller_seconds for o in profiled)}
    phases["statistics_view_commit"] = sum(o.control_seconds for o in profiled) - phases["ce"] - phases["controller"]
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    return {"nfe": nfe, "forwards_per_call": nfe / len(ids), "forward_ms": 1e3 * bare_s / nfe,
            "step_ms": 1e3 * loop_s / nfe, "rest_of_forward": (loop_s - bare_s) / bare_s,
            "paired_median": statistics.median(ratios), "paired_iqr": [quartiles[0], quartiles[2]],
            "step_work_of_forward": sum(phases.values()) / forward, "forward_in_loop_of_bare": forward / bare_s,
            "phases_of_forward": {k: v / forward for k, v in phases.items()}}


def measure(args, command: str, log=print) -> dict:
    """Every setting of ``args`` on one checkpoint; the results dict (``log`` gets a line per setting)."""
    caches = [c for c in args.caches.split(",") if c]
    bad = [c for c in caches if c not in CACHE_MODES]
    if bad:
        raise UsageError(f"--caches takes {', '.join(CACHE_MODES)}, got {bad}")
    ces = {"off": False, "on": True}
    if any(c not in ces for c in args.ce.split(",")):
        raise UsageError(f"--ce takes off, on or off,on, got {args.ce!r}")
    if args.n < 1 or args.repeats < 1:
        raise UsageError("--n and --repeats must be positive")
    model = load_model(args.model)
    ids, source = prompts(model, args.n, args.prompt_length)
    base = DecodeConfig(gen_length=args.gen_length, block_length=args.block_length).resolved(model)
    result = {"command": command, "revision": git_revision(), "device": device_name("cpu"), "torch": torch.__version__,
              "threads": torch.get_num_threads(), "note": args.note, "model": args.model, "prompts": source,
              "batch": 1, "gen_length": base.gen_length, "block_length": base.block_length, "repeats": args.repeats,
              "measure": "rest_of_forward = (generate time - bare forward time) / bare forward time, each prompt's "
                         "fastest repetition of each, summed over the prompts, the two timed back to back in one "
                         "process; step_work_of_forward: statistics, view, commit, CE and controller of a "
                         "profile=True decoding over its forward time (no per-call setup)",
              "targets": {slug(p, ce): t for (p, ce), t in OVERHEAD_BUDGETS.items()}, "rows": []}
    for controller in [p for p in args.controllers.split(",") if p]:
        kwargs, stand_in = controller_kwargs(model, controller, args.threshold)
        for ce in [ces[c] for c in args.ce.split(",") if c]:
            for cache in caches:
                config = base.replace(controller=controller, controller_kwargs=kwargs, ce=ce, cache=cache)
                row = {"policy": controller, "ce": ce, "cache": cache, **measure_setting(model, ids, config, args.repeats)}
                target = OVERHEAD_BUDGETS.get((controller, ce))
                row["target"], row["meets_target"] = target, None if target is None else row["rest_of_forward"] <= target
                if stand_in:
                    row["controller"] = stand_in
                result["rows"].append(row)
                log(f"{display_name(controller, ce, cache)}: rest of a step {100 * row['rest_of_forward']:.1f} % of "
                    f"its forward (paired median {100 * row['paired_median']:.1f}), the step's own work "
                    f"{100 * row['step_work_of_forward']:.1f} %, forwards in the loop {100 * row['forward_in_loop_of_bare']:.0f} % "
                    f"of bare, forward {row['forward_ms']:.2f} ms, "
                    f"{row['forwards_per_call']:.1f} forwards a call"
                    + ("" if target is None else f", target {100 * target:.0f} %: {'met' if row['meets_target'] else 'missed'}"))
    return result


# --- the record: results/bench/loop-<device>.json ---

DIRECTORY = REPO_ROOT / "results" / "bench"
GLOB = "loop-*.json"
CACHES = ("none", "prefix", "dual")   # a row's shares, in this order


@dataclass(frozen=True)
class BenchLoop:
    """One machine's file: where it was measured and its rows (each a dict as stored)."""
    name: str              # the file's name, loop-<device>.json
    model: str
    gen_length: int
    block_length: int
    device: str
    revision: str
    rows: list[dict]

    def target_groups(self) -> dict[tuple, list[dict]]:
        """(controller, ce) -> its rows that have a target, in stored order."""
        groups: dict[tuple, list[dict]] = {}
        for r in self.rows:
            if r.get("target") is not None:
                groups.setdefault((r["policy"], r["ce"]), []).append(r)
        return groups


def names(directory: str | Path | None = None) -> list[str]:
    return sorted(p.name for p in Path(directory or DIRECTORY).glob(GLOB))


def load_all(directory: str | Path | None = None) -> list[tuple[Path, dict]]:
    """Every file under ``directory`` (default the committed ones) as stored, by file name."""
    return [(p, read_json(p)) for p in sorted(Path(directory or DIRECTORY).glob(GLOB))]


def load(name: str, directory: str | Path | None = None) -> BenchLoop:
    d = read_json(Path(directory or DIRECTORY) / name)
    return BenchLoop(name, d["model"], d["gen_length"], d["block_length"], d["device"], d["revision"], d["rows"])


def save(result: dict, template: str) -> Path:
    """``result`` at ``template`` (``{device}`` replaced by the device's name)."""
    return write_device_file(result, template)


def share_text(x: float, target: float | None) -> str:
    """``x`` in per cent to one decimal, or to two where one would read as the target itself (5.04 % misses 5 %)."""
    one = f"{100 * x:.1f}"
    return f"{100 * x:.2f}" if target is not None and one == f"{100 * target:.1f}" and x != target else one


def _shares(rows: list[dict] | None) -> str:
    """``1.5 / **5.1** / 7.3``: the rest of a step per cache of :data:`CACHES`, bold where it misses its target."""
    by_cache = {r["cache"]: r for r in rows or []}
    cells = []
    for cache in CACHES:
        r = by_cache.get(cache)
        text = "-" if r is None else share_text(r["rest_of_forward"], r["target"])
        cells.append(f"**{text}**" if r is not None and not r["meets_target"] else text)
    return " / ".join(cells)


def overhead_table(directory: str | Path | None = None) -> str:
    """What a step costs beyond its forward, % of the forward: a row per controller that has a target, a column
    per committed file (its device), then each file's model, window and revision, and its path."""
    recs = [load(n, directory) for n in names(directory)]
    groups = [rec.target_groups() for rec in recs]
    settings = list(dict.fromkeys(key for g in groups for key in g))
    rows = [[display_name(*key), f"{100 * next(g[key] for g in groups if key in g)[0]['target']:g}",
             *[_shares(g.get(key)) for g in groups]] for key in settings]
    rows.append(["model, window, revision", "", *[f"`{r.model}`, {r.gen_length} / {r.block_length}, batch 1, `{r.revision}`"
                                                  for r in recs]])
    rows.append(["record", "", *[f"`{shown(Path(directory or DIRECTORY) / r.name)}`" for r in recs]])
    header = [f"controller ({' / '.join(CACHES)} cache)", "target, % (bold: missed)", *[r.device for r in recs]]
    return "\n".join(markdown_table(header, rows))
