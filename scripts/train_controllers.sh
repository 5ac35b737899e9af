#!/usr/bin/env bash
# Retrain the shipped TSPD and Learn2PD controllers of an embedded model (paper Sec. 3.2, App. A.3-A.4):
# stage 1 collects EGP traces on the first N problems of the `traces` split of the task the model was
# trained on (`<task>-traces`, the task named by its config.json: arith-traces for tiny-arith), stage 2
# trains both controllers on them and writes tspd/zoo/MODEL/controllers/{tspd,learn2pd}.*
# Usage: bash scripts/train_controllers.sh [N_PROMPTS (default 320)] [THREADS (default 2)] [MODEL]
# MODEL: an embedded model's name, tspd/zoo/MODEL (default: the book's model, tspd.models.loading.DEFAULT_MODEL).
# Run it after every change of tspd/zoo/MODEL/model.safetensors: a controller reads its model's
# confidence dynamics and records the sha256 of the weights it was trained on.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-320}
threads=${2:-2}
model=${3:-$(.venv/bin/python scripts/model_info.py book)}
[ -d "tspd/zoo/$model" ] || { echo "error: tspd/zoo/$model is missing (MODEL is an embedded model's name)" >&2; exit 2; }
task=$(.venv/bin/python scripts/model_info.py task "$model")
traces=runs/controllers/$model-traces-egp-$n.pt   # by model: two models of one task each get their own
mkdir -p runs/controllers
start=$(date +%s)
.venv/bin/python -m tspd collect-traces --model "$model" --prompts "$task-traces" --n "$n" --controller egp \
    --batch-size 32 --threads "$threads" --out "$traces"
echo "stage 1: $(( $(date +%s) - start )) s"
start=$(date +%s)
.venv/bin/python -m tspd train-controller --traces "$traces" --kind tspd --threads "$threads" --quiet \
    --out "tspd/zoo/$model/controllers/tspd"
.venv/bin/python -m tspd train-controller --traces "$traces" --kind learn2pd --threads "$threads" --quiet \
    --out "tspd/zoo/$model/controllers/learn2pd"
echo "stage 2: $(( $(date +%s) - start )) s"
sha256sum "$traces"
