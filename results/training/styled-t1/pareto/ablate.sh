#!/usr/bin/env bash
# TSPD without CE and Fast-dLLM with CE on tiny-styled's first 200 test problems (no cache): which half breaks answers.
set -euo pipefail
cd "$(dirname "$0")/../../../.."   # the repository root
OUT=runs/styled-pareto/ablate; mkdir -p $OUT
.venv/bin/python -m tspd eval --task styled --model tiny-styled --controller tspd --limit 200 --batch-size 32 --threads 2 --out $OUT/tspd-noce.jsonl
.venv/bin/python -m tspd eval --task styled --model tiny-styled --controller fast-dllm --threshold 0.9 --ce --limit 200 --batch-size 32 --threads 2 --out $OUT/fast-ce.jsonl
echo ABLATE-DONE
