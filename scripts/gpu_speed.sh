#!/usr/bin/env bash
# The GPU measurements of the speed issue (51): LLaDA-8B's shape with random weights built on the GPU.
# Run on a machine with one CUDA GPU, from the repository root or anywhere:
#     TSPD_REVISION=$(git rev-parse --short HEAD) bash scripts/gpu_speed.sh [OUT_DIR]   (default: results/gpu)
# (TSPD_REVISION names the revision where the tree travels without .git, as the device tool sends it.)
# Writes, in this order (each file complete when written, so a run cut short keeps the earlier ones):
#   OUT_DIR/forward/<device>.json   bench-forward: the full forward per lever (fused, compiled, graph), kernel
#                                   time by kind, the matmul shapes alone, attention per SDPA backend;
#   OUT_DIR/<device>.json           bench-step batch 1: steps, fast path, generate with the caches in CACHES
#                                   (default dual,none), parity and host syncs;
#   OUT_DIR/<device>-batch8.json    bench-step batch 8: steps (BATCH8_GENERATE=1 adds dual-cache generate).
# Timed on a lent NVIDIA H200: 312 s in all with both caches (2026-11-27), 302 s with FORWARD_REPEATS=10 (2026-11-28); 140 s with FORWARD_REPEATS=10
# CACHES=dual; batch 8's generate (BATCH8_GENERATE=1) took 87 s run alone.
# Needs only torch (and numpy/safetensors, imported by tspd): the package runs from the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/gpu}
py=${PYTHON:-python}
export PYTHONPATH=. PYTHONUNBUFFERED=1
shape=(--shape llada-8b --prompt 896 --gen 256 --block 32 --device cuda)
"$py" -m tspd bench-forward "${shape[@]}" --repeats "${FORWARD_REPEATS:-20}" --out "$out/forward/{device}.json"
caches=${CACHES:-dual,none}
"$py" -m tspd bench-step "${shape[@]}" --repeats 10 --generate-repeats 1 --batch 1 --fast --parity \
    --controllers vanilla,fast-dllm,tspd+ce --caches "$caches" --out "$out/{device}.json"
batch8=(--no-generate)
if [ "${BATCH8_GENERATE:-0}" = 1 ]; then batch8=(--controllers vanilla,tspd+ce --caches dual); fi
"$py" -m tspd bench-step "${shape[@]}" --repeats 10 --generate-repeats 1 --batch 8 --fast "${batch8[@]}" \
    --out "$out/{device}-batch8.json"
