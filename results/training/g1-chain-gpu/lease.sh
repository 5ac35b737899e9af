#!/usr/bin/env bash
# One device call: the speed measurements (issue 36 item 1, trimmed to the lease), then the regime model's training (item 3).
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
T0=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv
python3 -c "import torch,transformers,tokenizers,os;print(torch.__version__,transformers.__version__,tokenizers.__version__,os.cpu_count())"
shape="--shape llada-8b --prompt 896 --gen 256 --block 32 --device cuda --repeats 10 --generate-repeats 1"
timeout 210 python3 -m tspd bench-step $shape --batch 1 --fast --parity --policies vanilla,fast-dllm,tspd+ce --caches dual --out "$OUT/{device}.json" 2>&1 | tee "$OUT/speed.log"
echo "speed b1 done at $((SECONDS-T0)) s"
timeout 75 python3 -m tspd bench-step $shape --batch 8 --fast --policies fast-dllm --caches dual --out "$OUT/{device}-batch8.json" 2>&1 | tee -a "$OUT/speed.log"
echo "speed b8 done at $((SECONDS-T0)) s"
left=$((525 - (SECONDS - T0)))
M=$(python3 -c "print(round(max(1.0, ($left - 110) / 60), 2))")
E=$(python3 -c "print(round($M * 0.49, 2))")
echo "training $M min, evaluations every $E min, hard limit $left s"
timeout $left python3 -m tspd train-lm --out runs/g1 --task chain --long-windows 512:0.12,1024:0.03 --d-model 128 --n-layers 6 --n-heads 4 --mlp-hidden 352 --tokenizer bpe --masking causal --mask-mix 0.5 --alter-frac 0.3 --alter-any 0.5 --batch-size 256 --lr 3e-3 --min-lr-frac 0.05 --warmup-frac 0.03 --minutes $M --eval-minutes $E --eval-n 100 --regime --regime-long-n 32 --eval-batch 100 --final-eval-n 0 --prompt-multiple 32 --save-minutes 1 --log-every 200 --device cuda 2>&1 | tee "$OUT/train.log" | grep -v "^step .*positions/s" ; tail -3 "$OUT/train.log"
echo "training done at $((SECONDS-T0)) s"
tar czf "$OUT/g1.tgz" -C runs g1 && split -b 15m "$OUT/g1.tgz" "$OUT/g1.tgz." && rm "$OUT/g1.tgz"; ls -la "$OUT"
