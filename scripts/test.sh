#!/usr/bin/env bash
# The test command: install (if needed), then unit tests and nbval over the executed notebooks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MPLBACKEND=Agg PYTHONHASHSEED=0
exec .venv/bin/python -m pytest --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg "$@"
