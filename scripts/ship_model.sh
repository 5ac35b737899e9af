#!/usr/bin/env bash
# Ship a checkpoint trained by `python -m tspd train-lm` as an embedded model, tspd/zoo/NAME, and redo
# everything that was measured on the old one. NAME is $ZOO, by default the book's model
# (tspd.models.loading.DEFAULT_MODEL, today tiny-arith); the task comes from the checkpoint's own
# config.json (`tspd_task`). On the 2-core CPU this took 22 minutes for try 13 of tiny-arith (a sure
# model decodes in few forwards; a weak one took 1.5 hours) and 50 for try 19 on an AMD EPYC (the tables
# stage 33 of them, about 19 in its six vanilla rows of 64 forwards a problem): run it in
# the background (nohup), one heavy job at a time. Each stage can be rerun on its own:
#
#   bash scripts/ship_model.sh RUN_DIR [THREADS]                   all stages, as the book's model
#   ZOO=tiny-chain bash scripts/ship_model.sh RUN_DIR [THREADS]    as tspd/zoo/tiny-chain
#   STAGES="tables" bash scripts/ship_model.sh RUN_DIR             only some (copy controllers notebooks tables)
#   READ_BACK=1 STAGES="notebooks tables" bash scripts/ship_model.sh RUN_DIR
#                                        the book's runs already measured on NAME (scripts/stage_book.sh, moved
#                                        in by scripts/switch_book.py --staged): nothing is set aside, the
#                                        notebooks and tables read them back and measure only what is missing
#
#   copy         RUN_DIR's checkpoint, tokenizer, TRAINING.md, curves and sweep -> tspd/zoo/NAME/ (the curves,
#                TRAINING.md, sweep and probes also -> results/training/<RUN_DIR's name>/, the resumable state
#                stays in RUN_DIR); a NAME that holds a model of another task is refused. For the book's
#                model also the README's and the book's accuracy sentence.
#   controllers  stage 1 + 2 of NAME's controllers on its task's traces split (scripts/train_controllers.sh 200)
#   notebooks    set aside results/runs and results/variants, re-execute every notebook
#   tables       the 500-problem controller table (results/embedded_controllers.json from the harness
#                runs in results/controller_table/), cache agreement and the lm-eval example, all on NAME
#                (old results set aside first), then every number of the README's and the book's prose
#
# notebooks and tables are the book's: the notebooks run their parameter cells' model, and the tables'
# files are the README's. They run only where NAME is the book's model (refused up front otherwise).
# What is set aside is named <name>.before-<time> (git ignores it; delete it once the new results are in).
# Afterwards: paste `python -m tspd controller-table --markdown` and `python -m tspd cache-agreement
# --markdown` into book/controllers.md, update book/status.md, and run `bash scripts/test.sh`.
#
# Switching the book to another embedded model (tiny-chain, trained on `chain`; tiny-arith stays the test
# suite's fast model):
#   1. ship it beside the book's model:  ZOO=tiny-chain STAGES="copy controllers" bash scripts/ship_model.sh RUN_DIR
#   2-3. the package's one default model and the notebooks' parameter cells:
#                                        .venv/bin/python scripts/switch_book.py tiny-chain
#      (tspd/zoo/book.json, DEFAULT_MODEL; every parameter cell's `model` / `models` / `model_name` /
#      `out_dir`, `tasks` and `trace_source`; the regime page's `compare` keeps the old model beside it);
#      tests/test_notebooks.py checks that they name DEFAULT_MODEL and its task
#   4. the book's stages on it:          STAGES="notebooks tables" bash scripts/ship_model.sh RUN_DIR [THREADS]
#      (after `switch_book.py NAME --staged`: READ_BACK=1, or the staged runs are set aside and measured again)
#   5. book/controllers.md's pastes and book/status.md as above, the pages' prose on the old task, then the tests
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:?usage: [ZOO=NAME] bash scripts/ship_model.sh RUN_DIR [THREADS]}
threads=${2:-2}
stages=${STAGES:-copy controllers notebooks tables}
stamp=$(date +%Y%m%d-%H%M%S)
bash scripts/setup.sh >/dev/null
book=$(.venv/bin/python scripts/model_info.py book)
name=${ZOO:-$book}
zoo=tspd/zoo/$name

for stage in $stages; do   # every stage checked before any runs
  case $stage in
    copy|controllers) ;;
    notebooks|tables)
      [ "$name" = "$book" ] || { echo "error: stage $stage is the book's and $name is not the book's model ($book):" \
        "switch the book first (this script's header) or leave it out (STAGES=\"copy controllers\")" >&2; exit 2; } ;;
    *)
      echo "error: unknown stage $stage (copy, controllers, notebooks, tables)" >&2; exit 2 ;;
  esac
done

for stage in $stages; do
  start=$(date +%s)
  case $stage in
    copy)
      for f in config.json model.safetensors tokenizer.json tokenizer_config.json TRAINING.md; do
        [ -f "$run/$f" ] || { echo "error: $run/$f is missing (is $run a finished train-lm run?)" >&2; exit 2; }
      done
      task=$(.venv/bin/python scripts/model_info.py task "$run")
      if [ -f "$zoo/config.json" ] && [ "$(.venv/bin/python scripts/model_info.py task "$zoo")" != "$task" ]; then
        echo "error: $zoo holds a model of another task than $run's $task: ship it under its own name (ZOO=...)" >&2
        exit 2
      fi
      echo "shipping $run (task $task) as $zoo"
      mkdir -p "$zoo"
      cp "$run"/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json,TRAINING.md} "$zoo/"
      # evals.json: the record's final sweep, which tests/test_shipped_model.py checks TRAINING.md against
      [ -f "$run/evals.json" ] && cp "$run/evals.json" "$zoo/"
      cp "$run"/*.csv "$zoo/"   # the loss and learning curves the training notebook plots
      record=results/training/$(basename "$run")
      mkdir -p "$record"
      cp "$run"/*.csv "$run"/TRAINING.md "$record/"
      [ -f "$run/evals.json" ] && cp "$run/evals.json" "$record/"
      if [ -f "$run/probes.json" ]; then cp "$run/probes.json" "$zoo/"; cp "$run/probes.json" "$record/"; fi
      # the README's and the book's model table, from its record (tspd.book.model_card)
      if [ "$name" = "$book" ]; then .venv/bin/python -m tspd fill-records --only model-accuracy; fi
      ;;
    controllers)
      bash scripts/train_controllers.sh 200 "$threads" "$name"
      ;;
    notebooks)
      if [ -z "${READ_BACK:-}" ]; then
        for d in results/runs results/variants; do
          [ -d "$d" ] && mv "$d" "$d.before-$stamp"
        done
      fi
      bash scripts/execute_notebooks.sh
      ;;
    tables)
      # (results/embedded_controllers.samples.jsonl: the table's per-problem rows before they moved to
      # results/controller_table/; set aside like the rest)
      if [ -z "${READ_BACK:-}" ]; then
        for f in results/embedded_controllers results/cache_agreement; do
          for ext in json samples.jsonl; do
            [ -f "$f.$ext" ] && mv "$f.$ext" "$f.before-$stamp.$ext"
          done
        done
        [ -d results/controller_table ] && mv results/controller_table "results/controller_table.before-$stamp"
      fi
      .venv/bin/python -m tspd controller-table --model "$name" --n 500 --threads "$threads"
      .venv/bin/python -m tspd cache-agreement --model "$name" --n 500 --threads "$threads"
      # the README's lm-eval example and every table the README and the book fill from records (tspd.book.facts)
      .venv/bin/python -m tspd lmeval-example --model "$name" --threads "$threads"
      .venv/bin/python -m tspd fill-records
      ;;
  esac
  echo "stage $stage: $(( $(date +%s) - start )) s"
done
