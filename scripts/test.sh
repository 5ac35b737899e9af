#!/usr/bin/env bash
# The test command: install (if needed), then unit tests and nbval over the executed notebooks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# one test process per core (pytest-xdist; a file's tests, and a notebook's cells, stay on one process), each
# torch on one thread: more threads than cores slows every process several times over
export MPLBACKEND=Agg PYTHONHASHSEED=0 OMP_NUM_THREADS=1
exec .venv/bin/python -m pytest -n auto --dist loadfile --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg "$@"
