#!/usr/bin/env bash
# Create ./.venv and install tspd with every extra, at the versions that reproduce the stored runs (constraints.txt:
# torch 2.13.0's CPU build, ...). Re-running is cheap: the install is skipped while pyproject.toml and
# constraints.txt are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.tspd-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -c constraints.txt -e ".[all]"
  .venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
  echo "$want" > "$stamp"
fi
