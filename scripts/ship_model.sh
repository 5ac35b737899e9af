#!/usr/bin/env bash
# Ship a checkpoint trained by `python -m tspd train-lm` as the embedded model `tiny-arith`, and redo
# everything that was measured on the old one. On the 2-core CPU this took 22 minutes for try 13 (a sure
# model decodes in few forwards; a weak one took 1.5 hours) and 50 for try 19 on an AMD EPYC (the tables
# stage 33 of them, about 19 in its six vanilla rows of 64 forwards a problem): run it in
# the background (nohup), one heavy job at a time. Each stage can be rerun on its own:
#
#   bash scripts/ship_model.sh RUN_DIR [THREADS]   all stages
#   STAGES="tables" bash scripts/ship_model.sh RUN_DIR   only some (copy controllers notebooks tables)
#
#   copy         RUN_DIR's checkpoint, tokenizer, TRAINING.md, curves and sweep -> tspd/zoo/tiny-arith/ (the resumable
#                state and logs -> results/training/<RUN_DIR's name>/)
#   controllers  stage 1 + 2 of the controllers on the new model (scripts/train_controllers.sh 200)
#   notebooks    set aside results/runs and results/variants, re-execute every notebook
#   tables       the 500-problem controller table (results/embedded_controllers.json from the harness
#                runs in results/controller_table/) and cache agreement (old results set aside first)
#
# What is set aside is named <name>.before-<time> (git ignores it; delete it once the new results are in).
# Afterwards: paste `scripts/controller_table.py --markdown` and `scripts/cache_agreement.py
# --markdown` into the README, update its status section, and run `bash scripts/test.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:?usage: bash scripts/ship_model.sh RUN_DIR [THREADS]}
threads=${2:-2}
stages=${STAGES:-copy controllers notebooks tables}
zoo=tspd/zoo/tiny-arith
stamp=$(date +%Y%m%d-%H%M%S)
bash scripts/setup.sh >/dev/null

for stage in $stages; do
  start=$(date +%s)
  case $stage in
    copy)
      for f in config.json model.safetensors tokenizer.json tokenizer_config.json TRAINING.md; do
        [ -f "$run/$f" ] || { echo "error: $run/$f is missing (is $run a finished train-lm run?)" >&2; exit 2; }
      done
      cp "$run"/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json,TRAINING.md} "$zoo/"
      # evals.json: the record's final sweep, which tests/test_shipped_model.py checks TRAINING.md against
      [ -f "$run/evals.json" ] && cp "$run/evals.json" "$zoo/"
      cp "$run"/*.csv "$zoo/"   # the loss and learning curves the training notebook plots
      record=results/training/$(basename "$run")
      mkdir -p "$record"
      cp "$run"/*.csv "$run"/TRAINING.md "$record/"
      [ -f "$run/evals.json" ] && cp "$run/evals.json" "$record/"
      if [ -f "$run/probes.json" ]; then cp "$run/probes.json" "$zoo/"; cp "$run/probes.json" "$record/"; fi
      [ -f "$run/train_state.pt" ] && cp "$run/train_state.pt" "$record/"
      # the README's and the book's sentence on the model's accuracy, from its record (tspd.book.record)
      .venv/bin/python scripts/model_accuracy.py
      ;;
    controllers)
      bash scripts/train_controllers.sh 200 "$threads"
      ;;
    notebooks)
      for d in results/runs results/variants; do
        [ -d "$d" ] && mv "$d" "$d.before-$stamp"
      done
      bash scripts/execute_notebooks.sh
      ;;
    tables)
      # (results/embedded_controllers.samples.jsonl: the table's per-problem rows before they moved to
      # results/controller_table/; set aside like the rest)
      for f in results/embedded_controllers results/cache_agreement; do
        for ext in json samples.jsonl; do
          [ -f "$f.$ext" ] && mv "$f.$ext" "$f.before-$stamp.$ext"
        done
      done
      [ -d results/controller_table ] && mv results/controller_table "results/controller_table.before-$stamp"
      .venv/bin/python scripts/controller_table.py --n 500 --threads "$threads"
      .venv/bin/python scripts/cache_agreement.py --n 500 --threads "$threads"
      # the README's lm-eval example and every number the README and the book's prose state (tspd.book.prose)
      .venv/bin/python scripts/lmeval_example.py --threads "$threads"
      .venv/bin/python scripts/fill_records.py
      ;;
    *)
      echo "error: unknown stage $stage (copy, controllers, notebooks, tables)" >&2; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - start )) s"
done
