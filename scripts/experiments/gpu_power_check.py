"""Why a back-to-back full forward is slower than its kernels add up to, on a GPU (issue 51).

LLaDA-8B's shape, random weights, fused and compiled, the full forward replayed from a CUDA graph (no cache):
timed back to back, then with 0.2 s of rest before each replay, its kernel time by kind, and the SM clock,
power and clock-event reasons (0x4: software power cap) sampled while it replays for 4 s.
Run from the repository root on a machine with one CUDA GPU:  PYTHONPATH=. python3 scripts/experiments/gpu_power_check.py
Its one run so far (results/gpu/power/NVIDIA-H200.log, 2026-11-28) ran this file from a copy of the package
as of 997d003 (q, k transposed before RoPE), reformatted afterwards (one statement a line, the
poller's list passed in; the same calls in the same order).
"""
import subprocess
import threading
import time

import torch

from tspd.bench.step import build_model
from tspd.bench.forward import apply_lever, kernel_time_by_kind
from tspd.decoding.graphs import StepGraphs

dev = torch.device("cuda")
torch.manual_seed(0)
m = build_model("llada-8b", dev, torch.bfloat16)
apply_lever(m, "fused")
apply_lever(m, "compiled")
P, G = 896, 256
T = P + G
ids = torch.randint(0, m.config.vocab_size - 2, (1, T), device=dev)
ids[:, P:] = m.special.mask
pos = torch.arange(T, device=dev)[None]
r = StepGraphs(m, 1, T, cached=False, padded=False)
r.load(pos, None)
stop = False


def ev(fn, n=30, gap=0.0):
    """(median, min) ms of ``fn`` by CUDA events; ``gap`` s of rest (device idle) before each call."""
    ts = []
    for _ in range(n):
        if gap:
            torch.cuda.synchronize()
            time.sleep(gap)
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2], ts[0]


def poll(samples):
    query = "--query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"
    while not stop:
        samples.append(subprocess.run(["nvidia-smi", query, "--format=csv,noheader"], capture_output=True,
                                      text=True).stdout.strip())
        time.sleep(0.3)


with torch.no_grad():
    r(ids, 0, T, P)
    g, out = r.graphs[(0, T, P)]
    print("runner call (median, min ms)", ev(lambda: r(ids, 0, T, P)))
    print("replay alone", ev(g.replay))
    print("replay alone, 0.2 s rest before each", ev(g.replay, 10, 0.2))
    k = kernel_time_by_kind(dev, g.replay, calls=5)
    print("kernel ms", {a: round(b * 1e3, 3) for a, b in k["seconds"].items()},
          "sum", round(sum(k["seconds"].values()) * 1e3, 2), k["kernels"])
    samples = []
    th = threading.Thread(target=poll, args=(samples,))
    th.start()
    t0 = time.time()
    while time.time() - t0 < 4:
        g.replay()
    torch.cuda.synchronize()
    stop = True
    th.join()
    print("during a 4 s replay loop:", samples[::2])
    print("replay right after the loop", ev(g.replay))
