#!/usr/bin/env bash
# Re-execute notebooks in place with their default parameters (what is committed, and what nbval
# compares against). Usage: bash scripts/execute_notebooks.sh [notebooks/NAME.ipynb ...]
# Without arguments: every notebook of _toc.yml, in the book's order. Runs already measured are
# read back from results/runs (delete it, or a run's files, to measure afresh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
unset MPLBACKEND   # notebook kernels then use the inline backend: their figures are kept
export PYTHONHASHSEED=0
if [ $# -eq 0 ]; then
  mapfile -t books < <(.venv/bin/python scripts/book_notebooks.py)
  set -- "${books[@]}"
fi
for nb in "$@"; do
  start=$(date +%s)
  .venv/bin/papermill "$nb" "$nb" --cwd notebooks --log-level WARNING --no-progress-bar
  echo "$nb: $(( $(date +%s) - start )) s"
done
