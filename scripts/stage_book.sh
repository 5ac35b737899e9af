#!/usr/bin/env bash
# Measure the book's runs on an embedded model before the book switches to it, so that the switch
# (ship_model.sh's header, steps 2-4) only reads them back. On a model that decodes slowly the book's
# runs take many CPU-hours: this spreads them over sessions, committed as they finish, without touching
# what the book shows today.
#
#   bash scripts/stage_book.sh NAME [THREADS] [PART ...]      PART: notebooks, table, agreement (default: all)
#
#   notebooks  every notebook of _toc.yml that stores its runs (a `results_dir` parameter), run by papermill
#              with its parameter cell pointed at NAME (model / models, tasks [<task>], trace_source
#              <task>-traces) and results_dir results/staging/NAME/runs (traces and trained controllers in
#              runs/variants, verdicts in results/staging/NAME/claims); the executed copies go to /tmp
#   table      python -m tspd controller-table --n 500 -> results/staging/NAME/embedded_controllers.json
#              (its rows in results/staging/NAME/controller_table/)
#   agreement  python -m tspd cache-agreement --n 500 -> results/staging/NAME/cache_agreement.json
#
# Resumable: the harness reads back finished runs and rows, so a rerun measures only what is missing
# (kill it at any time; rerun the same command). Never stop it with SIGSTOP to time something else: its
# rows keep wall times. A batch that shared the cores with other work is found and dropped by
# `.venv/bin/python scripts/redo_disturbed.py results/staging/NAME/runs` (rerun this script afterwards). When the
# book switches to NAME, `.venv/bin/python scripts/switch_book.py NAME --staged` moves them in place of the old
# model's (it refuses while a part is missing), then READ_BACK=1 STAGES="notebooks tables" bash scripts/ship_model.sh
# RUN_DIR reads them back (without READ_BACK it sets them aside and measures everything again).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: bash scripts/stage_book.sh NAME [THREADS] [PART ...]}
threads=${2:-2}
shift $(( $# < 2 ? $# : 2 ))
parts=${*:-notebooks table agreement}
bash scripts/setup.sh >/dev/null
[ -d "tspd/zoo/$name" ] || { echo "error: tspd/zoo/$name is missing (NAME is an embedded model's name)" >&2; exit 2; }
task=$(.venv/bin/python scripts/model_info.py task "$name")
[ -d "tspd/zoo/$name/controllers" ] || {
  echo "error: tspd/zoo/$name has no controllers yet: ZOO=$name STAGES=controllers bash scripts/ship_model.sh first" >&2; exit 2; }
stage=results/staging/$name
mkdir -p "$stage/runs"
export PYTHONHASHSEED=0
for part in $parts; do
  start=$(date +%s)
  case $part in
    notebooks)
      mapfile -t books < <(.venv/bin/python scripts/book_notebooks.py --stored)
      for nb in "${books[@]}"; do
        t=$(date +%s)
        .venv/bin/papermill "$nb" "/tmp/staged-$(basename "$nb")" --cwd notebooks --log-level WARNING --no-progress-bar \
          -y "{model: $name, models: [$name], tasks: [$task], trace_source: $task-traces, threads: $threads,
               results_dir: $PWD/$stage/runs}"
        echo "$nb: $(( $(date +%s) - t )) s"
      done ;;
    table)
      .venv/bin/python -m tspd controller-table --model "$name" --n 500 --threads "$threads" \
        --out "$stage/embedded_controllers.json" ;;
    agreement)
      .venv/bin/python -m tspd cache-agreement --model "$name" --n 500 --threads "$threads" \
        --out "$stage/cache_agreement.json" ;;
    *)
      echo "error: unknown part $part (notebooks, table, agreement)" >&2; exit 2 ;;
  esac
  echo "part $part: $(( $(date +%s) - start )) s"
done
