#!/usr/bin/env bash
# The README's two commands, timed from a fresh clone of the committed HEAD, into results/fresh_clone.json
# (tspd.records.fresh_clone; the README's table of their times: tspd.records.fresh_clone.times_table).
# Usage: bash scripts/time_fresh_clone.sh [CLONE_DIR]   (the clone is left in place; run on a quiet machine)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
clone=${1:-/tmp/tspd-fresh-clone}
rm -rf "$clone"
git clone -q "$repo" "$clone"
shared=True; [ -e "$clone/../shared" ] || shared=False
[ $shared = False ] && echo "note: $clone/../shared is missing (tests that need it skip)"
cd "$clone"
revision=$(git rev-parse --short HEAD)
load=$(cut -d" " -f1 /proc/loadavg)
t00=$(date +%s)
bash scripts/setup.sh > setup.log 2>&1     # the venv first, timed on its own: test.sh then finds it made
t0=$(date +%s)
set +e
bash scripts/test.sh > test.log 2>&1
test_rc=$?
set -e
t1=$(date +%s)
bash scripts/build_book.sh > book.log 2>&1
t2=$(date +%s)
summary=$(grep -E "^=+ .*(passed|failed).* =+$" test.log | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
written=$(cd "$repo" && "$repo/.venv/bin/python" - <<PY   # the record is the repository's, not the clone's
import os, time
from tspd.provenance import device_name
from tspd.records import fresh_clone
print(fresh_clone.save(fresh_clone.FreshClone(
    command="bash scripts/time_fresh_clone.sh", revision="$revision", date=time.strftime("%Y-%m-%d"),
    device=device_name("cpu").split(" (")[0], cores=os.cpu_count(), load_average_before=$load,
    venv_seconds=$((t0 - t00)), tests_seconds=$((t1 - t0)), tests_exit=$test_rc, tests_summary="$summary",
    book_seconds=$((t2 - t1)), shared=$shared)))
PY
)
echo "venv: $((t0 - t00)) s; tests: $((t1 - t0)) s ($summary, exit $test_rc); book: $((t2 - t1)) s -> $written"
exit $test_rc
