"""Where a full forward's time goes, and what each lever buys (issue 51): ``python -m tspd bench-forward``
(:mod:`tspd.commands.bench_forward`), and its record ``results/gpu/forward/<device>.json`` with the tables read
from it.

The full forward (prompt + generated region, logits for the generated region only, as the loop runs it) of a
random-weight model, timed in variants that each add one lever to the one before:

- ``eager``: q/k/v and gate/up as separate matmuls, the element-wise chains eager;
- ``fused``: + fused projections (:mod:`tspd.models.fused`);
- ``compiled``: + the element-wise chains compiled into one kernel each (:mod:`tspd.models.pointwise`);
- ``graph``: + replayed from a CUDA graph (:mod:`tspd.decoding.graphs`; off a GPU, its static path eagerly); its
  full forward writes no cache, like the others' (bench-step's ``full_forward_fast`` is the one that does).

Each variant records its median time, the dual-cache step's, its largest logit difference from ``eager`` and,
on a GPU, its kernel time by kind (:func:`kernel_kind`, torch.profiler). Then the forward's matmul shapes are
timed alone against the measured peak (what a matmul of this many rows can reach: the floor that is really
on offer), and the attention under each SDPA backend.

The record (the last section): ``python -m tspd bench-forward --out results/gpu/forward/{device}.json`` (run by
``scripts/gpu_speed.sh`` on a GPU) writes one ``results/gpu/forward/<device>.json`` per card (:func:`save`; read
by :func:`load`); the step-speed page shows each as three tables (:func:`variant_rows`, :func:`kind_rows`,
:func:`matmul_rows`), the status page every card's in one (:func:`forward_table`).
"""
from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F

from tspd.bench import step
from tspd.bench.step import Timer, build_model, filled_runner, floor_seconds, forward_cost, peak_rates
from tspd.decoding.graphs import StepGraphs
from tspd.models.fused import fuse_projections
from tspd.models.pointwise import compiles_here, use_compiled
from tspd.provenance import device_name, git_revision
from tspd.records.device_files import write_device_file
from tspd.records.files import read_json, shown
from tspd.validate import UsageError, check_device

VARIANTS = ("eager", "fused", "compiled", "graph")
TOP_KERNELS = 15   # the kernel names (first 160 characters) with the most time, per variant
# substrings of CUDA kernel names, tried in this order (attention kernels first: some contain "gemm")
KINDS = (
    ("attention", ("flash", "fmha", "sdpa", "attention", "attn")),
    ("compiled", ("triton",)),
    ("matmul", ("gemm", "nvjet", "cutlass", "xmma", "cublas", "splitk")),
    ("norm", ("rms", "norm")),
    ("copy", ("copy", "cat", "memcpy", "memset", "index")),
    ("reduce", ("reduce",)),
    ("elementwise", ("elementwise", "vectorized", "unrolled")),
)


def kernel_kind(name: str) -> str:
    """The kind of a CUDA kernel by its name: attention, compiled, matmul, norm, copy, reduce, elementwise, other."""
    low = name.lower()
    return next((kind for kind, keys in KINDS if any(k in low for k in keys)), "other")


def kernel_time_by_kind(device: torch.device, fn, calls: int = 3) -> dict | None:
    """Seconds of GPU kernel time per call by :func:`kernel_kind` and for the top kernel names, and kernels per
    call (None off CUDA)."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize(device)
    kinds, names, n = defaultdict(float), defaultdict(float), 0
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            seconds = e.time_range.elapsed_us() * 1e-6 / calls
            kinds[kernel_kind(e.name)] += seconds
            names[e.name[:160]] += seconds
            n += 1
    top = dict(sorted(names.items(), key=lambda kv: -kv[1])[:TOP_KERNELS])
    return {"seconds": dict(sorted(kinds.items(), key=lambda kv: -kv[1])), "kernels": n // calls, "top": top}


def matmul_shapes(cfg, rows: int, head_rows: int) -> list[tuple[str, int, int, int, int]]:
    """(name, M, K, N, per forward) of every matmul of a fused full forward."""
    d, h, hd = cfg.d_model, cfg.mlp_hidden_size, cfg.head_dim
    L = cfg.n_layers
    return [("qkv", rows, d, (cfg.n_heads + 2 * cfg.kv_heads) * hd, L), ("attn_out", rows, cfg.n_heads * hd, d, L),
            ("gate_up", rows, d, 2 * h, L), ("ff_out", rows, h, d, L), ("head", head_rows, d, cfg.rows, 1)]


def time_matmuls(cfg, rows: int, head_rows: int, device, dtype, timer: Timer, peaks: dict) -> dict:
    """Each matmul shape alone: seconds, its share of the peak, and the forward's matmul total at these rates."""
    out, total = {}, 0.0
    for name, m, k, n, count in matmul_shapes(cfg, rows, head_rows):
        x = torch.randn(m, k, device=device, dtype=dtype)
        w = torch.randn(n, k, device=device, dtype=dtype)
        t = timer(lambda: F.linear(x, w))
        out[name] = {"m": m, "k": k, "n": n, "per_forward": count, "seconds": t,
                     "peak_fraction": 2 * m * k * n / t / peaks["matmul_flops"]}
        total += t * count
    out["forward_total_seconds"] = total
    return out


def time_attention(cfg, batch: int, length: int, device, dtype, timer: Timer) -> dict:
    """One layer's attention over the whole canvas under each SDPA backend (None: not available here)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = (torch.randn(batch, cfg.n_heads, length, cfg.head_dim, device=device, dtype=dtype) for _ in range(3))
    out = {"default": timer(lambda: F.scaled_dot_product_attention(q, k, v))}
    for name in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
        try:
            with sdpa_kernel([getattr(SDPBackend, name)]):
                out[name.lower()] = timer(lambda: F.scaled_dot_product_attention(q, k, v))
        except (RuntimeError, AttributeError):
            out[name.lower()] = None
    return out


def apply_lever(model, variant: str) -> None:
    if variant == "fused":
        fuse_projections(model.module)
    elif variant == "compiled":
        use_compiled(model.module)


def step_calls(model, variant: str, ids: torch.Tensor, pos: torch.Tensor, prompt: int, block: int):
    """The full forward (logits for the generated region, no cache written) and a dual-cache step over the first
    block, as the loop calls them: from CUDA graphs for ``graph`` (the full forward from a cache-free runner, as
    cache-free decoding replays it; the step from one whose cache a first full forward filled), else eagerly."""
    if variant == "graph":
        (B, T), runner = ids.shape, filled_runner(model, ids, pos, prompt)
        full = StepGraphs(model, B, T, cached=False, padded=False)
        full.load(pos, None)
        return lambda: full(ids, 0, T, prompt), lambda: runner(ids, prompt, prompt + block)
    kv = model.new_cache()
    model(ids, cache=kv)
    return (lambda: model(ids, logits_from=prompt),
            lambda: model(ids[:, prompt:prompt + block], position_ids=pos[:, prompt:prompt + block], cache=kv,
                          offset=prompt))


def measure(args: argparse.Namespace, command: str, log=print) -> dict:
    device = check_device(args.device)
    dtype = getattr(torch, args.dtype) if args.dtype else (torch.bfloat16 if device.type == "cuda" else torch.float32)
    chosen = args.variants if args.variants is not None else ",".join(VARIANTS if compiles_here(device) else VARIANTS[:2])
    variants = [v for v in chosen.split(",") if v]
    if variants != list(VARIANTS[:len(variants)]):
        raise UsageError(f"--variants takes a prefix of {','.join(VARIANTS)} (each adds a lever), got {args.variants}")
    timer = Timer(device, args.repeats, args.warmup)
    torch.manual_seed(args.seed)
    peaks = peak_rates(device, dtype, timer)
    model = build_model(args.shape, device, dtype)
    cfg, B, P, G, Lb = model.config, args.batch, args.prompt, args.gen, args.block
    T = P + G
    ids = torch.randint(0, cfg.vocab_size - 2, (B, T), device=device)
    ids[:, P:] = model.special.mask
    pos = torch.arange(T, device=device).expand(B, T)
    elem = torch.finfo(dtype).bits // 8
    floor = floor_seconds(forward_cost(cfg, B, T, T, elem, head_rows=G), peaks)
    result = {"command": command, "revision": git_revision(), "device": device_name(device),
              "torch": torch.__version__, "dtype": str(dtype).removeprefix("torch."), "shape": args.shape,
              "batch": B, "prompt": P, "gen": G, "block": Lb, "peaks": peaks, "floor_seconds": floor, "variants": {}}
    reference = None
    with torch.no_grad():
        for variant in variants:
            apply_lever(model, variant)
            full_fn, dual_fn = step_calls(model, variant, ids, pos, P, Lb)
            logits = full_fn().float()
            reference = logits if reference is None else reference
            row = {"seconds": timer(full_fn), "dual_step_seconds": timer(dual_fn),
                   "max_abs_logit_diff": (logits - reference).abs().max().item(),
                   "same_argmax": bool(torch.equal(logits.argmax(-1), reference.argmax(-1))),
                   "kernels": kernel_time_by_kind(device, full_fn)}
            row["floor_fraction"] = floor / row["seconds"]
            result["variants"][variant] = row
            log(f"{variant}: full forward {row['seconds'] * 1e3:.2f} ms ({100 * row['floor_fraction']:.0f} % of "
                f"the floor {floor * 1e3:.2f} ms), dual step {row['dual_step_seconds'] * 1e3:.2f} ms, "
                f"max |logit diff| {row['max_abs_logit_diff']:.3g}")
            if row["kernels"]:
                log("  kernel ms by kind: " + ", ".join(f"{k} {s * 1e3:.2f}" for k, s in row["kernels"]["seconds"].items())
                    + f" ({row['kernels']['kernels']} kernels)")
    result["matmuls"] = time_matmuls(cfg, B * T, B * G, device, dtype, timer, peaks)
    log("matmuls alone: " + ", ".join(f"{k} {v['seconds'] * 1e3:.3f} ms ({100 * v['peak_fraction']:.0f} % of peak)"
                                      for k, v in result["matmuls"].items() if isinstance(v, dict))
        + f"; the forward's matmuls at these rates {result['matmuls']['forward_total_seconds'] * 1e3:.2f} ms")
    result["attention"] = time_attention(cfg, B, T, device, dtype, timer)
    log("attention per layer by SDPA backend (ms): " + ", ".join(
        f"{k} {'-' if v is None else f'{v * 1e3:.3f}'}" for k, v in result["attention"].items()))
    return result


# --- the record: results/gpu/forward/<device>.json ---

DIRECTORY = step.DIRECTORY / "forward"


def load_all(directory: str | Path | None = None) -> list[tuple[Path, dict]]:
    """Every file under ``directory`` (default the committed ones) as stored, by file name."""
    return [(p, read_json(p)) for p in sorted(Path(directory or DIRECTORY).glob("*.json"))]


def load(device: str, directory: str | Path | None = None) -> tuple[Path, dict]:
    """``results/gpu/forward/<device>.json`` (``device`` as its file names it, e.g. ``NVIDIA-H200``) and its dict."""
    path = Path(directory or DIRECTORY) / f"{device}.json"
    return path, read_json(path)


def save(result: dict, template: str) -> Path:
    """``result`` at ``template`` (``{device}`` replaced by the device's name)."""
    return write_device_file(result, template)


def matmul_flops(result: dict) -> float:
    """FLOPs of one forward's matmuls (its shapes as stored), attention's excluded."""
    return sum(2 * m["m"] * m["k"] * m["n"] * m["per_forward"] for m in result["matmuls"].values() if isinstance(m, dict))


def variant_rows(result: dict) -> list[dict]:
    """One row per lever: the full forward's ms and share of the floor, the dual step's ms, the logits' distance
    from the first variant, the kernels a forward launches and its matmul kernels' rate as a share of the measured
    peak (both None off CUDA)."""
    peak_seconds = matmul_flops(result) / result["peaks"]["matmul_flops"]
    rows = []
    for name, v in result["variants"].items():
        kernels = v["kernels"] or {}
        matmul = kernels.get("seconds", {}).get("matmul")
        rows.append({"variant": name, "full forward ms": 1e3 * v["seconds"], "of floor": v["floor_fraction"],
                     "dual step ms": 1e3 * v["dual_step_seconds"], "max |logit diff|": v["max_abs_logit_diff"],
                     "kernels": kernels.get("kernels"), "matmuls of peak": matmul and peak_seconds / matmul})
    return rows


def kind_rows(result: dict) -> list[dict]:
    """Kernel ms per forward by kind (rows) for each variant (columns); empty off CUDA."""
    measured = {name: v["kernels"]["seconds"] for name, v in result["variants"].items() if v["kernels"]}
    kinds = list(dict.fromkeys(k for by_kind in measured.values() for k in by_kind))
    return [{"kind": k, **{f"{name} ms": 1e3 * by_kind.get(k, 0.0) for name, by_kind in measured.items()}}
            for k in kinds]


def matmul_rows(result: dict) -> list[dict]:
    """Each matmul shape of the forward timed alone: ms, per forward, and its share of the measured peak."""
    return [{"matmul": name, "M x K x N": f"{m['m']} x {m['k']} x {m['n']}", "per forward": m["per_forward"],
             "ms alone": 1e3 * m["seconds"], "of peak": m["peak_fraction"]}
            for name, m in result["matmuls"].items() if isinstance(m, dict)]


FORWARD_ROWS = ["matmul kernels, % of the measured peak, per variant", "element-wise, copy and norm kernels, ms a "
                "forward: fused, then compiled and replayed", "full forward from a CUDA graph, ms",
                "its kernels, ms: all (matmuls, attention, compiled chains)", "record"]


def forward_cells(path: Path, result: dict) -> list[str]:
    """A card's column of :func:`forward_table`, a cell per :data:`FORWARD_ROWS` (dashes off CUDA)."""
    rows = {r["variant"]: r for r in variant_rows(result)}
    kinds = {r["kind"]: r for r in kind_rows(result)}
    if "graph" not in rows or "matmul" not in kinds:
        return ["-"] * (len(FORWARD_ROWS) - 1) + [f"`{shown(path)}`"]
    spent = {v: sum(kinds[k][f"{v} ms"] for k in ("elementwise", "copy", "norm", "compiled") if k in kinds)
             for v in ("fused", "graph")}
    peak = ", ".join(f"{name} {100 * r['matmuls of peak']:.0f}" for name, r in rows.items() if r["matmuls of peak"])
    graph = {k: kinds[k]["graph ms"] if k in kinds else 0.0 for k in ("matmul", "attention", "compiled")}
    return [f"{peak} (peak: an {result['peaks']['matmul_n']}-cubed product)", f"{spent['fused']:.1f}, then {spent['graph']:.1f}",
            f"{rows['graph']['full forward ms']:.2f}, {100 * rows['graph']['of floor']:.0f} % of its floor "
            f"({1e3 * result['floor_seconds']:.2f} ms)",
            f"{sum(r['graph ms'] for r in kinds.values()):.1f} ({graph['matmul']:.1f}, {graph['attention']:.1f}, "
            f"{graph['compiled']:.1f})", f"`{shown(path)}`"]


def forward_table(cards: tuple[str, ...] = step.CARDS, directory: str | Path | None = None) -> str:
    """Where the full forward's time goes on each card of ``cards`` with a file: a row per :data:`FORWARD_ROWS`."""
    found = [load(card, directory) for card in cards if (Path(directory or DIRECTORY) / f"{card}.json").is_file()]
    return step.card_table(FORWARD_ROWS, {result["device"]: forward_cells(path, result) for path, result in found})
