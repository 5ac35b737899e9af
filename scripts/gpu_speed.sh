#!/usr/bin/env bash
# The GPU measurements of the speed issue: LLaDA-8B's shape with random weights built on the GPU.
# Run on a machine with one CUDA GPU, from the repository root or anywhere:
#     bash scripts/gpu_speed.sh [OUT_DIR]        (default OUT_DIR: results/gpu)
# Writes OUT_DIR/<device>.json (batch 1: steps, fast path, dual-cache generate, parity, host syncs) and
# OUT_DIR/<device>-batch8.json (batch 8: steps). Timed on a lent NVIDIA H200 (2026-11-26): 97 s and 23 s
# after the machine's start, sized to a 15-minute lease. FULL=1 adds the cache-free generate calls and
# their parity at batch 1 and the dual-cache generate at batch 8 (not yet run: batch 8's generate alone
# took over 100 s on the H200 for two policies).
# Needs only torch (and numpy/safetensors, imported by tspd): the package runs from the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/gpu}
py=${PYTHON:-python}
shape=(--shape llada-8b --prompt 896 --gen 256 --block 32 --device cuda --repeats 10 --generate-repeats 1)
caches=dual; batch8=(--no-generate)
if [ "${FULL:-0}" = 1 ]; then caches=none,dual; batch8=(--policies vanilla,fast-dllm,tspd+ce --caches dual); fi
PYTHONPATH=. "$py" -m tspd bench-step "${shape[@]}" --batch 1 --fast --parity \
    --policies vanilla,fast-dllm,tspd+ce --caches "$caches" --out "$out/{device}.json"
PYTHONPATH=. "$py" -m tspd bench-step "${shape[@]}" --batch 8 --fast "${batch8[@]}" --out "$out/{device}-batch8.json"
