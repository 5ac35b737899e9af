#!/usr/bin/env bash
# Continue the regime model's GPU try g1 (issue 32 / issue 36 item 3) on a machine with one CUDA GPU, for
# the seconds given (default 480), then pack the run into OUT_DIR (default runs/) as g1.tgz.* pieces of
# 15 MB (a lent machine returns at most 8 files of 16 MiB). Usage, from the repository root:
#     bash scripts/gpu_train.sh [SECONDS] [OUT_DIR]
# It resumes results/training/g1-chain-gpu (copied to runs/g1) with its own options, WORKERS batch-building
# processes (unset: scripts/stream_rate.py times one thread against 12 processes first and takes the
# faster; on the H100 of 2026-11-26, before --batch-seeds, 12 processes gave 290-460k positions/s against
# one thread's 570-850k, see the record's README), each batch drawn from a seed of its own (--batch-seeds:
# workers draw only their own batches, a resume skips without replaying the stream) and
# a schedule stretched to the training minutes so far plus what SECONDS leaves after ~130 s for the stream timing,
# tokenizer, the evaluations and packing. Judge the result as any try: eval_log.csv / TRAINING.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-480}; out=${2:-runs}
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
[ -f runs/g1/train_state.pt ] || { mkdir -p runs && cp -r results/training/g1-chain-gpu runs/g1; }
done_min=$("$py" -c "import torch; print(torch.load('runs/g1/train_state.pt', map_location='cpu', weights_only=False)['info']['train_seconds'] / 60)")
minutes=$("$py" -c "print(round($done_min + max(1.0, ($seconds - 130) / 60), 2))")
evals=$("$py" -c "print(round(($minutes - $done_min) * 0.49, 2))")
echo "g1: $done_min min trained; schedule to $minutes min, evaluations every $evals min"
opts=(--out runs/g1 --task chain --long-windows 512:0.12,1024:0.03 --d-model 128 --n-layers 6 --n-heads 4
      --mlp-hidden 352 --tokenizer bpe --masking causal --mask-mix 0.5 --alter-frac 0.3 --alter-any 0.5
      --batch-size 256 --lr 3e-3 --min-lr-frac 0.05 --warmup-frac 0.03 --minutes "$minutes"
      --eval-minutes "$evals" --eval-n 100 --regime --regime-long-n 32 --eval-batch 100 --final-eval-n 0
      --prompt-multiple 32 --save-minutes 1 --log-every 200 --device cuda --batch-seeds --resume)
train() {   # train(WORKERS, SECONDS)
  set -o pipefail
  timeout "$2" "$py" -m tspd train-lm "${opts[@]}" --data-workers "$1" 2>&1 | tee -a "$out/g1-train.log" | \
    grep -v "positions/s$"
}
start=$SECONDS
# WORKERS unset: time the stream (about 20 s) with one thread and with 12 processes, and take the faster
workers=${WORKERS:-$("$py" scripts/stream_rate.py --workers 0,12 --seconds 8 -- "${opts[@]}" 2>>"$out/g1-train.log" | tail -1)}
workers=${workers:-0}
echo "g1: batches built by ${workers} processes (0: one thread); stream rates in $out/g1-train.log"
train "$workers" $((seconds - (SECONDS - start))) || { rc=$?; [ $rc -ne 124 ] && [ $((SECONDS - start)) -lt 150 ] && \
  echo "train-lm failed (exit $rc) in $((SECONDS - start)) s: again with one batch thread" && \
  train 0 $((seconds - (SECONDS - start))); } || true
tar czf "$out/g1.tgz" -C runs g1 && split -b 15m "$out/g1.tgz" "$out/g1.tgz." && rm "$out/g1.tgz"
ls -la "$out"
