#!/usr/bin/env bash
# The main job: install (if needed), execute every notebook on the embedded model, build the book.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
unset MPLBACKEND   # notebook kernels then use the inline backend: their figures are kept
export PATH="$PWD/.venv/bin:$PATH"
start=$(date +%s)
jupyter-book clean --all . >/dev/null
jupyter-book build . -W -n --keep-going
echo "book built in $(( $(date +%s) - start )) s: open _build/html/index.html"
