"""Decoding steps of a random-weight model against the roofline: ``python -m tspd bench-step``
(:mod:`tspd.commands.bench_step`), and its record ``results/gpu/<device>.json`` with the tables read from it.

The model is built directly on the device with random weights (no download, no CPU copy). After a
warm-up, each measurement is the median of many repeats, timed with CUDA events on a GPU and
``perf_counter`` on a CPU:

- ``full_forward``: one forward over prompt + generated region, logits for the generated region only
  as the loop computes them (the no-cache step, and the first
  step of each block under both caches);
- ``prefix_step``: a cached forward over [block_start, end) (Fast-dLLM prefix cache);
- ``dual_step``: a cached forward over the block only (Fast-dLLM dual cache);
- ``generate``: a whole :func:`tspd.decoding.loop.generate` call per NFE for several controllers, and the
  controller + CE time per step as a fraction of one forward.

(``python -m tspd bench-loop``, :mod:`tspd.bench.loop`, times the whole loop against its bare forwards on
a real checkpoint instead.)

``--fast`` adds the same steps replayed from CUDA graphs (:mod:`tspd.decoding.graphs`: ``*_fast`` rows and
``<controller>/<cache>/fast`` generate rows); ``--parity`` checks that the fast path decodes the same tokens
as the eager one for every timed controller and cache, and on a GPU counts the host synchronisations per
forward inside ``generate`` (CUDA's sync debug mode).

The roofline floors use peak rates measured on the same device (a large matmul, a large copy):
time >= max(FLOPs / peak_flops, bytes moved / peak_bandwidth).

The record (the last section): ``python -m tspd bench-step --out results/gpu/{device}.json`` (run by
``scripts/gpu_speed.sh`` on a GPU) writes ``results/gpu/<device>.json`` (:func:`save`; read by :func:`load`);
:func:`speed_table` is the status page's table of each card against its goals, and the step-speed page and the
README's headline read the files too.
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from tspd.models.fused import fuse_projections
from tspd.models.pointwise import compiles_here, use_compiled
from tspd.models.config import LLaDAConfig
from tspd.decoding.config import DecodeConfig
from tspd.decoding.loop import generate
from tspd.decoding.graphs import StepGraphs
from tspd.decoding.controllers import REGISTRY
from tspd.decoding.names import by_slug, slug
from tspd.markdown import table as markdown_table
from tspd.models.loading import LoadedModel, SpecialTokens
from tspd.models.llada import LLaDAModelLM
from tspd.provenance import REPO_ROOT, device_name, git_revision
from tspd.records.device_files import write_device_file
from tspd.records.files import read_json, shown
from tspd.validate import CACHE_MODES, UsageError, check_device

# LLaDA-8B-Instruct's config.json values (Hugging Face ``GSAI-ML/LLaDA-8B-Instruct``); ids as that file declares them
SHAPES = {
    "llada-8b": dict(d_model=4096, n_layers=32, n_heads=32, n_kv_heads=32, mlp_hidden_size=12288,
                     vocab_size=126464, embedding_size=126464, rope_theta=500000.0, rms_norm_eps=1e-5,
                     mask_token_id=126336, eos_token_id=126081, pad_token_id=126081),
    "tiny": dict(d_model=256, n_layers=6, n_heads=4, n_kv_heads=4, mlp_hidden_size=768, vocab_size=96,
                 rope_theta=10000.0, mask_token_id=95, eos_token_id=94, pad_token_id=94),
}


TIMED = (("vanilla", False), ("fast-dllm", False), ("tspd", True))   # (controller, CE) timed inside generate by default


def timed_decodings(controllers: str) -> list[tuple[str, bool]]:
    """``--controllers`` as (controller, CE) pairs, each name looked up among the decodings' slugs (``tspd+ce``)."""
    known = {name: (controller, ce) for name, (controller, ce, cache) in by_slug().items() if cache is None}
    names = [p for p in controllers.split(",") if p]
    bad = [p for p in names if p not in known]
    if bad:
        raise UsageError(f"--controllers: unknown {', '.join(bad)}; each is a controller ({', '.join(REGISTRY)}), "
                         f"or one with Confidence Extrapolation ({slug('tspd', True)})")
    return [known[p] for p in names]


class Timer:
    """Median wall time of ``fn`` over repeats; CUDA events on a GPU, perf_counter elsewhere."""

    def __init__(self, device: torch.device, repeats: int, warmup: int):
        self.device, self.repeats, self.warmup = device, repeats, warmup

    def __call__(self, fn) -> float:
        for _ in range(self.warmup):
            fn()
        times = []
        for _ in range(self.repeats):
            if self.device.type == "cuda":
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) / 1e3)
            else:
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
        return statistics.median(times)


def build_model(shape: str, device: torch.device, dtype: torch.dtype, fuse: bool = False) -> LoadedModel:
    """Random weights created on ``device`` in ``dtype`` (never materialised on the CPU first), as a
    loaded model of no directory (no tokenizer); ``fuse``: its projections fused (:mod:`tspd.models.fused`)."""
    cfg = LLaDAConfig(**SHAPES[shape])
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LLaDAModelLM(cfg).eval()
    finally:
        torch.set_default_dtype(prev)
    if fuse:
        fuse_projections(model)
    for p in model.parameters():
        p.requires_grad_(False)
    return LoadedModel(model, special=SpecialTokens(mask=cfg.mask_token_id, eos=cfg.eos_token_id,
                                                    pad=cfg.pad_token_id))


def peak_rates(device: torch.device, dtype: torch.dtype, timer: Timer) -> dict:
    """Measured peak matmul FLOP/s and copy bandwidth on this device."""
    n = 8192 if device.type == "cuda" else 1024
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    t_mm = timer(lambda: a @ b)
    nbytes = (1 << 30) if device.type == "cuda" else (1 << 27)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    t_cp = timer(lambda: dst.copy_(src))
    return {"matmul_flops": 2 * n ** 3 / t_mm, "copy_bytes_per_s": 2 * nbytes / t_cp,
            "matmul_n": n, "copy_bytes": nbytes}


def forward_cost(cfg: LLaDAConfig, batch: int, q_len: int, kv_len: int, elem: int, head_rows: int | None = None) -> dict:
    """FLOPs and bytes of one forward of ``q_len`` query tokens attending over ``kv_len`` keys.

    ``head_rows``: window rows that get logits (default all ``q_len``; the loop skips the prompt's).
    """
    d, L, hd = cfg.d_model, cfg.n_layers, cfg.head_dim
    head_rows = q_len if head_rows is None else head_rows
    per_layer = 2 * d * (cfg.n_heads * hd + 2 * cfg.kv_heads * hd) + 2 * cfg.n_heads * hd * d + 3 * 2 * d * cfg.mlp_hidden_size
    tokens, logits = batch * q_len, batch * head_rows
    flops = tokens * L * per_layer + logits * 2 * d * cfg.rows + L * batch * 4 * q_len * kv_len * cfg.n_heads * hd
    weights = (L * per_layer // 2 + 2 * d * cfg.rows) * elem            # every weight read once
    kv_bytes = L * batch * 2 * kv_len * cfg.kv_heads * hd * elem
    return {"flops": flops, "bytes": weights + kv_bytes + logits * cfg.rows * elem}


def floor_seconds(cost: dict, peaks: dict) -> float:
    return max(cost["flops"] / peaks["matmul_flops"], cost["bytes"] / peaks["copy_bytes_per_s"])


def _random_tspd_net():
    """A randomly initialised TSPD network of the paper's shape (timing only: its gates are meaningless)."""
    from tspd.decoding.controllers.tspd import TSPDConfig, TSPDNet
    return TSPDNet(TSPDConfig())


def filled_runner(model, ids: torch.Tensor, pos: torch.Tensor, prompt: int) -> StepGraphs:
    """CUDA graphs for ``ids``' shape (cached, unpadded) with their own cache filled by a full forward, as a
    block's first step leaves it: the fast path's steps, ready to time."""
    B, T = ids.shape
    runner = StepGraphs(model, B, T, cached=True, padded=False)
    runner.load(pos, None)
    runner(ids, 0, T, prompt)
    return runner


def bench_batch(model, batch: int, args, timer: Timer, peaks: dict) -> dict:
    cfg, dev = model.config, model.device
    P, G, Lb = args.prompt, args.gen, args.block
    T = P + G
    ids = torch.randint(0, cfg.vocab_size - 2, (batch, T), device=dev)
    ids[:, P:] = model.special.mask
    kv = model.new_cache()
    pos = torch.arange(T, device=dev).expand(batch, T)
    with torch.no_grad():
        full = timer(lambda: model(ids, logits_from=P))          # as the loop runs it: no logits for the prompt
        model(ids, cache=kv)
        prefix = timer(lambda: model(ids[:, P:], position_ids=pos[:, P:], cache=kv, offset=P))
        dual = timer(lambda: model(ids[:, P:P + Lb], position_ids=pos[:, P:P + Lb], cache=kv, offset=P))
        kernels = kernels_per_call(dev, lambda: model(ids[:, P:P + Lb], position_ids=pos[:, P:P + Lb], cache=kv,
                                                     offset=P))
    steps = {"full_forward": (full, T, G), "prefix_step": (prefix, G, G), "dual_step": (dual, Lb, Lb)}
    if args.fast or args.parity:
        with torch.no_grad():
            model(ids, cache=kv)                     # the same history on both paths: full forward, then dual
            eager_dual = model(ids[:, P:P + Lb], position_ids=pos[:, P:P + Lb], cache=kv, offset=P)
            runner = filled_runner(model, ids, pos, P)
            fast_dual = runner(ids, P, P + Lb)
            if args.fast:
                steps["prefix_step_fast"] = timer(lambda: runner(ids, P, T)), G, G
                steps["dual_step_fast"] = timer(lambda: runner(ids, P, P + Lb)), Lb, Lb
                steps["full_forward_fast"] = timer(lambda: runner(ids, 0, T, P)), T, G
        parity_logits = (fast_dual.float() - eager_dual.float()).abs().max().item()
        del runner
    elem = torch.finfo(model.dtype).bits // 8
    row = {"batch": batch, "prompt": P, "gen": G, "block": Lb}
    for name, (t, q, rows) in steps.items():
        floor = floor_seconds(forward_cost(cfg, batch, q, T, elem, head_rows=rows), peaks)
        row[name] = {"seconds": t, "floor_seconds": floor, "floor_fraction": floor / t}
    row["dual_step"]["kernels"] = kernels
    if args.parity:
        row["parity"] = {"dual_step_max_abs_logit_diff": parity_logits}
    if args.no_generate:
        return row
    prompts = ids[:, :P]
    row["generate"] = {}
    for name, ce in timed_decodings(args.controllers):
        kw = {"net": _random_tspd_net()} if name == "tspd" else {}
        for cache in [c for c in args.caches.split(",") if c]:
            same = DecodeConfig(gen_length=G, block_length=Lb, controller=name, controller_kwargs=kw, ce=ce, cache=cache,
                                confidence_dtype=args.confidence_dtype)
            for fast in ((False, True) if args.fast else (False,)):
                call = same.replace(fast=fast)
                runs = [generate(model, prompts, call) for _ in range(args.generate_repeats + 1)]
                prof = generate(model, prompts, call, profile=True)
                timed = runs[1:]                   # the first call is a warm-up (and captures the graphs)
                row["generate"][entry_key(name, ce, cache, fast)] = {
                    "seconds_per_nfe": statistics.median(o.seconds / o.nfe for o in timed), "nfe": timed[-1].nfe,
                    "tokens_per_second": statistics.median(o.tokens_per_second for o in timed),
                    "control_fraction_of_forward": prof.control_overhead}
            if args.parity:
                eager = generate(model, prompts, same)
                fast_out = generate(model, prompts, same.replace(fast=True))
                syncs = host_syncs(dev, lambda: generate(model, prompts, same.replace(fast=True)))
                row["parity"][entry_key(name, ce, cache)] = {
                    "same_tokens": bool(torch.equal(eager.token_ids, fast_out.token_ids)),
                    "same_nfe": eager.nfe == fast_out.nfe,
                    "host_syncs_per_forward": None if syncs is None else syncs / fast_out.nfe}
    return row


def kernels_per_call(device: torch.device, fn) -> int | None:
    """GPU kernels one eager ``fn()`` launches (torch.profiler; None off CUDA or without CUPTI).

    Each costs a launch from Python: the count says how host-bound an eager step is.
    """
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize(device)
    except RuntimeError:
        return None
    n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return n or None


def host_syncs(device: torch.device, fn) -> int | None:
    """Host synchronisations during ``fn()``, counted with CUDA's sync debug mode (None off CUDA).

    Calibrated on one known sync (``.item()``): None if the warnings do not come through.
    """
    if device.type != "cuda":
        return None

    def count(f) -> int:
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                f()
        finally:
            torch.cuda.set_sync_debug_mode("default")
        return sum("synchroniz" in str(w.message) for w in caught)

    probe = torch.zeros(1, device=device)
    if count(lambda: probe.sum().item()) < 1:
        return None
    return count(fn)


def measure(args: argparse.Namespace, command: str, log=print) -> dict:
    """Run every measurement of ``args``; returns the results dict (``log`` gets a line per result)."""
    device = check_device(args.device)
    dtype = getattr(torch, args.dtype) if args.dtype else (torch.bfloat16 if device.type == "cuda" else torch.float32)
    if args.gen % args.block:
        raise UsageError(f"--gen {args.gen} is not a multiple of --block {args.block}")
    try:
        batches = [int(x) for x in args.batch.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--batch takes comma-separated integers, got {args.batch!r}") from None
    timed_decodings(args.controllers)   # a bad name fails before the model is built
    bad = [c for c in args.caches.split(",") if c and c not in CACHE_MODES]
    if bad:
        raise UsageError(f"--caches takes {', '.join(CACHE_MODES)}, got {bad}")
    if not batches or min(batches) < 1 or args.prompt < 1 or args.repeats < 1:
        raise UsageError("--batch sizes, --prompt and --repeats must be positive")
    timer = Timer(device, args.repeats, args.warmup)
    torch.manual_seed(args.seed)
    peaks = peak_rates(device, dtype, timer)
    fused = device.type != "cpu" and not args.no_fuse
    model = build_model(args.shape, device, dtype, fused)
    compiled = compiles_here(device) and not args.no_compile
    if compiled:
        use_compiled(model.module)
    result = {
        "command": command, "revision": git_revision(),
        "device": device_name(device),
        "torch": torch.__version__, "dtype": str(dtype).removeprefix("torch."), "shape": args.shape,
        "confidence_dtype": args.confidence_dtype,
        "params": sum(p.numel() for p in model.parameters()), "fused": fused,
        "compiled": compiled, "peaks": peaks, "rows": [],
    }
    for b in batches:
        row = bench_batch(model, b, args, timer, peaks)
        result["rows"].append(row)
        log(f"batch {b}: " + ", ".join(
            f"{k} {v['seconds'] * 1e3:.2f} ms (floor {v['floor_seconds'] * 1e3:.2f})"
            for k, v in row.items() if isinstance(v, dict) and "seconds" in v))
        for k, v in row.get("generate", {}).items():
            frac = v["control_fraction_of_forward"]
            log(f"  generate {k}: {v['seconds_per_nfe'] * 1e3:.2f} ms/NFE, NFE {v['nfe']}, "
                f"{v['tokens_per_second']:.1f} tok/s, controller+CE {100 * frac:.2f} % of a forward")
        for k, v in row.get("parity", {}).items():
            log(f"  parity {k}: {v}")
    return result


# --- the record: results/gpu/<device>.json ---

DIRECTORY = REPO_ROOT / "results" / "gpu"
# The speed goals at LLaDA-8B's shape, batch 1, bf16 (the issues', not the paper's): issue 36 set them for one H100,
# issue 51 asked the full forward at >= 80 % of its matmul floor, <= 28 ms on an H100 and <= 26 ms on an H200.
GOALS = {"H100": {"dual_step_ms": 8.0, "full_forward_ms": 28.0, "control_percent": 1.0},
         "H200": {"dual_step_ms": 8.0, "full_forward_ms": 26.0, "control_percent": 1.0}}
FLOOR_SHARE_GOAL = 0.8   # the full forward's floor over its time, at least
CARDS = ("NVIDIA-H200", "NVIDIA-H100-80GB-HBM3")   # the cards the README and the status page show, as files name them


def goals(device: str) -> dict[str, float]:
    """The goals for the card ``device`` names (an H100's for any other card)."""
    return next((g for card, g in GOALS.items() if card in device), GOALS["H100"])


@dataclass(frozen=True)
class BenchStep:
    """One device's file: its device and dtype and one row per batch size (dicts as stored)."""
    name: str
    device: str
    dtype: str
    rows: list[dict]

    def batch(self, size: int) -> dict:
        return next(r for r in self.rows if r["batch"] == size)


def entry_key(controller: str, ce: bool, cache: str, fast: bool = False) -> str:
    """The key of a decoding's entry in a row's ``generate`` or ``parity``: its slug, then ``/fast`` for the
    CUDA-graph fast path (``tspd+ce/dual/fast``)."""
    return slug(controller, ce, cache) + ("/fast" if fast else "")


def beyond_forwards(row: dict, key: str) -> float | None:
    """What a ``generate`` call of ``row`` spent beyond its forwards, as a fraction of its mean forward, by wall
    clock: its seconds per NFE against the row's own step times, each block's first step a full forward and every
    later one the dual cache's block step (from CUDA graphs on the fast path). Unlike the profiled share, it lets
    the host's work overlap the device's, as decoding does. None where the row lacks those step times, and for
    the prefix cache (its window shrinks) and eager calls (their first steps also write the cache)."""
    g = row["generate"][key]
    *_, cache, fast = decoding_entries({key: g})[key]
    suffix = "_fast" if fast else ""
    full, dual = row.get("full_forward" + suffix), row.get("dual_step" + suffix)
    if not fast or cache == "prefix" or full is None or (cache == "dual" and dual is None):
        return None
    firsts = min(g["nfe"], row["gen"] // row["block"])
    forwards = g["nfe"] * full["seconds"] if cache == "none" else \
        firsts * full["seconds"] + (g["nfe"] - firsts) * dual["seconds"]
    return g["seconds_per_nfe"] * g["nfe"] / forwards - 1


def best_full_forward(row: dict) -> dict:
    """The faster of a row's eager and fast-path full forwards (its ``seconds`` and ``floor_seconds``): what the
    goals judge, since decoding takes the fast path where it is faster."""
    return min((row["full_forward"], row.get("full_forward_fast")), key=lambda s: s["seconds"] if s else float("inf"))


def goal_rows(result: dict) -> list[dict]:
    """Batch 1 at LLaDA-8B's shape against :func:`goals` for the card (``measure``, ``goal``, ``measured``,
    ``met``; ``measured`` None where ``result``, a stored file as a dict, lacks the measurement)."""
    rows = []
    for r in result["rows"]:
        if result["shape"] != "llada-8b" or r["batch"] != 1:
            continue
        dual, full = r.get("dual_step_fast") or r["dual_step"], best_full_forward(r)["seconds"]
        timed, fast_key = r.get("generate", {}), entry_key("tspd", True, "dual", fast=True)
        control = timed.get(fast_key) or timed.get(entry_key("tspd", True, "dual"))
        goal = goals(result["device"])
        for what, at_most, value in [("dual-cache step (ms)", goal["dual_step_ms"], 1e3 * dual["seconds"]),
                                     ("full forward (ms)", goal["full_forward_ms"], 1e3 * full),
                                     ("controller + CE, % of a forward", goal["control_percent"],
                                      None if control is None else 100 * control["control_fraction_of_forward"])]:
            rows.append({"measure": what, "goal": f"at most {at_most:g}", "measured": value,
                         "met": None if value is None else value <= at_most})
        if fast_key in timed and (beyond := beyond_forwards(r, fast_key)) is not None:
            rows.append({"measure": "TSPD + CE beyond its forwards, fast path, % of a forward (wall clock)",
                         "goal": f"at most {goal['control_percent']:g}", "measured": 100 * beyond,
                         "met": 100 * beyond <= goal["control_percent"]})
        share = r["full_forward"]["floor_seconds"] / full
        rows.append({"measure": "full forward, % of its floor", "goal": f"at least {100 * FLOOR_SHARE_GOAL:g}",
                     "measured": 100 * share, "met": share >= FLOOR_SHARE_GOAL})
    return rows


def decoding_entries(entries: dict) -> dict[str, tuple[str, bool, str, bool]]:
    """Key -> ``(controller, ce, cache, fast)`` of each of ``entries`` (a row's ``generate`` or ``parity``) that is a
    decoding's, in stored order: found among the keys :func:`entry_key` makes (a parity row's
    ``dual_step_max_abs_logit_diff`` is none of them)."""
    known = {entry_key(p, ce, cache, fast): (p, ce, cache, fast)
             for p, ce, cache in by_slug().values() if cache is not None for fast in (False, True)}
    return {k: known[k] for k in entries if k in known}


def load(device: str, directory: str | Path | None = None) -> BenchStep:
    """``results/gpu/<device>.json`` (``device`` as its file names it, e.g. ``NVIDIA-H200``)."""
    d = read_json(Path(directory or DIRECTORY) / f"{device}.json")
    return BenchStep(f"{device}.json", d["device"], d["dtype"], d["rows"])


def load_all(directory: str | Path | None = None) -> list[tuple[Path, dict]]:
    return [(p, read_json(p)) for p in sorted(Path(directory or DIRECTORY).glob("*.json"))]


def card_table(labels: list[str], columns: dict[str, list[str]]) -> str:
    """A Markdown table with a row per label and a column per card (``columns``: header -> its cells in the labels'
    order)."""
    return "\n".join(markdown_table(["", *columns], [[label, *(c[i] for c in columns.values())]
                                                     for i, label in enumerate(labels)]))


SPEED_ROWS = ["setting (LLaDA-8B's shape, batch 1)", "dual-cache step, fast path, ms", "dual-cache step, eager, ms",
              "full forward, ms", "full forward against its roofline floor",
              "fast path decodes as the eager loop (same tokens, same NFE)",
              "controller + CE, % of a fast-path forward (profiled, dual cache)",
              "beyond its forwards, % of a forward (wall clock, fast path, dual cache)", "record"]


def _per_decoding(values: dict[str, float]) -> str:
    return ", ".join(f"{name} {v:.1f}" for name, v in values.items()) or "-"


def speed_cells(rec: BenchStep) -> list[str]:
    """A card's column of :func:`speed_table`, a cell per :data:`SPEED_ROWS` (a dash where the file lacks it)."""
    row, goal = rec.batch(1), goals(rec.device)
    ms = lambda step: f"{1e3 * row[step]['seconds']:.2f}" if row.get(step) else "-"   # noqa: E731
    timed, checked = decoding_entries(row.get("generate", {})), decoding_entries(row.get("parity", {}))
    dual = {k: slug(p, ce) for k, (p, ce, cache, fast) in timed.items() if cache == "dual" and fast}
    control = {name: 100 * row["generate"][k]["control_fraction_of_forward"] for k, name in dual.items()}
    beyond = {name: 100 * b for k, name in dual.items() if (b := beyond_forwards(row, k)) is not None}
    same = all(row["parity"][k]["same_tokens"] and row["parity"][k]["same_nfe"] for k in checked)
    parity = (f"{'yes' if same else 'NO'}: {', '.join(dict.fromkeys(slug(p, ce) for p, ce, *_ in checked.values()))}; "
              f"cache {' and '.join(dict.fromkeys(c for _, _, c, _ in checked.values()))}") if checked else "-"
    full, floor = best_full_forward(row)["seconds"], row["full_forward"]["floor_seconds"]
    launches = f" ({row['dual_step']['kernels']:,} kernel launches)" if row["dual_step"].get("kernels") else ""
    return [f"{rec.dtype}, prompt {row['prompt']} + {row['gen']}, block {row['block']}",
            f"{ms('dual_step_fast')} (goal {goal['dual_step_ms']:g})", ms("dual_step") + launches,
            f"{1e3 * full:.2f} (goal {goal['full_forward_ms']:g})",
            f"{100 * floor / full:.0f} % of it (floor {1e3 * floor:.2f} ms; goal {100 * FLOOR_SHARE_GOAL:.0f} %)",
            parity, f"{_per_decoding(control)} (goal {goal['control_percent']:g})", _per_decoding(beyond),
            f"`{shown(DIRECTORY / rec.name)}`"]


def speed_table(cards: tuple[str, ...] = CARDS, directory: str | Path | None = None) -> str:
    """Batch 1 at LLaDA-8B's shape on each card of ``cards`` with a file, against its goals (:func:`goals`)."""
    found = [load(card, directory) for card in cards if (Path(directory or DIRECTORY) / f"{card}.json").is_file()]
    return card_table(SPEED_ROWS, {rec.device: speed_cells(rec) for rec in found})


def save(result: dict, template: str) -> Path:
    return write_device_file(result, template)
