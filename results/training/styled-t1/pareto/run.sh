#!/usr/bin/env bash
# The gate's trade-off on tiny-styled (issue 67): Fast-dLLM's threshold sweep and TSPD + CE's gate sweep on the
# same 200 test problems, no cache; the Pareto page's notebook with its own results folder.
set -euo pipefail
# (run from a frozen worktree of the revision its runs record, runs/ linked to the main checkout's)
cd "$(dirname "$0")/../../../.."   # the repository root
OUT=runs/styled-pareto
mkdir -p $OUT
.venv/bin/papermill notebooks/pareto.ipynb $OUT/pareto.ipynb -k python3 \
  -p model tiny-styled -p limit 200 -p batch_size 32 -p threads 2 -p results_dir $OUT/runs \
  -y 'tasks: [styled]' -y 'caches: [none]' -y 'fast_dllm_thresholds: [0.7, 0.9, 0.99]' -y 'credit_thresholds: []' \
  -y 'tspd_gates: [0.5, 0.9, 0.99, 0.999]' -y 'learn2pd_accepts: [0.96]' -y 'prophet_scales: []'
echo PARETO-DONE
