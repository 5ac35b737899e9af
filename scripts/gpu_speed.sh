#!/usr/bin/env bash
# The GPU measurements of the speed issue: LLaDA-8B's shape with random weights built on the GPU.
# Run on a machine with one CUDA GPU, from the repository root or anywhere:
#     bash scripts/gpu_speed.sh [OUT_DIR]        (default OUT_DIR: results/gpu)
# Writes OUT_DIR/<device>.json (batch 1: steps, fast path, generate, parity, host syncs) and
# OUT_DIR/<device>-batch8.json (batch 8: steps and the dual-cache generate). Estimated 10 minutes on an
# H100, not yet timed; the two calls can also be run one at a time.
# Needs only torch (and numpy/safetensors, imported by tspd): the package runs from the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/gpu}
py=${PYTHON:-python}
shape=(--shape llada-8b --prompt 896 --gen 256 --block 32 --device cuda)
PYTHONPATH=. "$py" -m tspd bench-step "${shape[@]}" --batch 1 --fast --parity \
    --policies vanilla,fast-dllm,tspd+ce --caches none,dual --out "$out/{device}.json"
PYTHONPATH=. "$py" -m tspd bench-step "${shape[@]}" --batch 8 --fast --generate-repeats 1 \
    --policies vanilla,fast-dllm,tspd+ce --caches dual --out "$out/{device}-batch8.json"
