#!/usr/bin/env bash
# Retrain the shipped TSPD and Learn2PD controllers of the embedded model (paper Sec. 3.2, App. A.3-A.4):
# stage 1 collects EGP traces on the first N problems of the `traces` split, stage 2 trains both
# controllers on them and writes tspd/zoo/tiny-arith/controllers/{tspd,learn2pd}.*
# Usage: bash scripts/train_controllers.sh [N_PROMPTS (default 320)] [THREADS (default 2)]
# Run it after every change of tspd/zoo/tiny-arith/model.safetensors: a controller reads its model's
# confidence dynamics and records the sha256 of the weights it was trained on.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-320}
threads=${2:-2}
traces=runs/controllers/arith-traces-egp-$n.pt
mkdir -p runs/controllers
start=$(date +%s)
.venv/bin/python -m tspd collect-traces --model tiny-arith --prompts arith-traces --n "$n" --policy egp \
    --batch-size 32 --threads "$threads" --out "$traces"
echo "stage 1: $(( $(date +%s) - start )) s"
start=$(date +%s)
.venv/bin/python -m tspd train-controller --traces "$traces" --kind tspd --threads "$threads" --quiet \
    --out tspd/zoo/tiny-arith/controllers/tspd
.venv/bin/python -m tspd train-controller --traces "$traces" --kind learn2pd --threads "$threads" --quiet \
    --out tspd/zoo/tiny-arith/controllers/learn2pd
echo "stage 2: $(( $(date +%s) - start )) s"
sha256sum "$traces"
