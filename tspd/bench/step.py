"""Time decoding steps of a random-weight model against the roofline: ``python -m tspd bench-step``
(:mod:`tspd.commands.bench_step`).

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
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch

from tspd.models.fused import fuse_projections
from tspd.models.pointwise import compiles_here, use_compiled
from tspd.models.config import LLaDAConfig
from tspd.decoding.config import DecodeConfig
from tspd.decoding.loop import generate
from tspd.decoding.graphs import StepGraphs
from tspd.decoding.controllers import REGISTRY
from tspd.decoding.names import by_slug, slug
from tspd.models.loading import LoadedModel, SpecialTokens
from tspd.models.llada import LLaDAModelLM
from tspd.provenance import device_name, git_revision
from tspd.records.bench_step import entry_key
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
