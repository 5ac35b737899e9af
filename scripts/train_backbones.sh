#!/usr/bin/env bash
# The roster task in Dream's and LLaDA-MoE's layouts (paper Table 2 in kind), trained as tiny-roster was in
# LLaDA's: roster-t3's recipe (results/training/roster-t3/TRAINING.md) with --arch, one run each. tiny-roster's
# three tries took 115 minutes of training on the 2-core CPU; each layout gets that budget by default.
#
#   bash scripts/train_backbones.sh dream [MINUTES] [THREADS]       runs/roster-dream
#   bash scripts/train_backbones.sh llada-moe [MINUTES] [THREADS]   runs/roster-llada-moe (8 experts, 2 active)
#   AR_MINUTES=20 bash scripts/train_backbones.sh dream ...         Dream's own recipe: an autoregressive start
#                                                                   (runs/roster-dream-ar), then diffusion from it
#   EVAL_MINUTES=25 bash scripts/train_backbones.sh ...              evaluate (accuracy, probes, regime figures)
#                                                                   every 25 training minutes (default 15)
#
# The shipped tspd/zoo/roster-dream: AR_MINUTES=20 bash scripts/train_backbones.sh dream 80 (20 AR + 60 diffusion
# minutes; results/training/roster-dream-from-ar/README.md).
# Resumable: rerun the same command (each run continues from its train_state.pt). One heavy job at a time:
# run it in the background (nohup) with nothing else decoding. Then ship each like tiny-roster
# (ZOO=roster-dream STAGES="copy controllers" bash scripts/ship_model.sh runs/roster-dream-from-ar 2) and measure its
# regime record (python -m tspd regime --model roster-dream --threads 2).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: bash scripts/train_backbones.sh dream|llada-moe [MINUTES] [THREADS]}
minutes=${2:-115}
threads=${3:-2}
case $arch in dream|llada-moe) ;; *) echo "error: the layout is dream or llada-moe, got $arch" >&2; exit 2 ;; esac
bash scripts/setup.sh >/dev/null
recipe=(--task roster --arch "$arch" --d-model 128 --n-layers 4 --n-heads 4 --mlp-hidden 352 --gen-length 256
        --block-length 32 --long-windows 512:0.1 --compile --eval-minutes "${EVAL_MINUTES:-15}" --eval-n 64 --regime
        --regime-long-n 0 --final-eval-n 0 --threads "$threads")
resumed() { [ -f "$1/train_state.pt" ] && echo --resume || true; }
out=runs/roster-$arch
start=()
if [ -n "${AR_MINUTES:-}" ]; then
  [ "$arch" = dream ] || { echo "error: AR_MINUTES is Dream's autoregressive start (--arch dream)" >&2; exit 2; }
  ar=runs/roster-dream-ar
  .venv/bin/python -m tspd train-lm --out "$ar" "${recipe[@]}" --objective ar --minutes "$AR_MINUTES" \
    --eval-minutes 0 --regime-long-n 0 $(resumed "$ar")
  out=runs/roster-dream-from-ar
  start=(--init-from "$ar")
  minutes=$(( minutes - AR_MINUTES ))   # the same budget in all
fi
.venv/bin/python -m tspd train-lm --out "$out" "${recipe[@]}" --minutes "$minutes" "${start[@]}" $(resumed "$out")
