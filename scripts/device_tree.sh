#!/usr/bin/env bash
# Fit the working tree to the device tool's 64 MiB for one call, and put it back afterwards.
# The tool sends the tracked files (about 194 MB here, mostly training records' weights and states), so
# `slim` untracks the heavy record folders in the index only (nothing is deleted, nothing committed) and
# ignores them locally; `restore` undoes both. Never commit between the two: the commit would delete them.
#     bash scripts/device_tree.sh slim       # then run the device call (carry what it needs, e.g. runs/g1)
#     bash scripts/device_tree.sh restore    # at once afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
heavy=(results/training results/controller_table results/runs results/variants)
exclude=.git/info/exclude
case ${1:-} in
  slim)
    git diff --cached --quiet || { echo "error: the index has staged changes; commit or unstage them first" >&2; exit 2; }
    git rm -r -q --cached "${heavy[@]}"
    { echo "# device_tree.sh"; for h in "${heavy[@]}"; do echo "/$h/"; done; echo "# /device_tree.sh"; } >> "$exclude"
    sent=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1)
    echo "what the device tool sends now: about $sent KiB (tracked and untracked-not-ignored); run the device" \
         "call, then: bash scripts/device_tree.sh restore (do not commit before)" ;;
  restore)
    git reset -q -- "${heavy[@]}"
    sed -i '/^# device_tree.sh$/,/^# \/device_tree.sh$/d' "$exclude"
    git diff --cached --quiet && echo "restored: the index is HEAD's again for ${heavy[*]}" ;;
  *)
    echo "usage: bash scripts/device_tree.sh slim|restore" >&2; exit 2 ;;
esac
