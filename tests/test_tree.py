"""The tracked tree holds code and records, not leftovers: no tracked file over ``LARGE`` bytes unless
``ALLOWED`` names it with a reason, and all of them together within ``TREE`` bytes (results/training/README.md
says where the training runs' weights and states are instead); and no Python file over ``MAX_LINES`` lines."""
from __future__ import annotations

import subprocess
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LARGE = 2_000_000    # bytes: a larger tracked file must match ALLOWED
TREE = 55_000_000    # bytes: every tracked file together (code, notebooks, records, the embedded models: 40 MB
                     # until the Dream- and MoE-layout models, 6.9 MB of weights, and their Table 2 runs came;
                     # 44 MB until tiny-styled, the model with the paper's Section 3 dynamics, 2.6 MB; 47 MB until
                     # tiny-leaning, the first whose caches hold with those dynamics, 2.5 MB; 50 MB until
                     # tiny-shell, the first whose accuracy slopes with tokens per step, 2.3 MB; 52 MB until
                     # tiny-leaning-shell, a slope with the Section 3 middle, 2.2 MB) ...
STAGED = 30_000_000  # ... but the book's runs on its next model, measured ahead (scripts/stage_book.sh): the
STAGING = "results/staging/"   # switch moves them into results/ and the old book's runs leave the tree
TRACES = "a trace set the notebooks read back (tspd.training.variants.traces, gzip); collecting it again decodes " \
         "every prompt again"
ALLOWED = {          # glob (each * one path segment) -> why the file belongs in the tree
    "tspd/zoo/*/model.safetensors": "an embedded model's weights: what the package decodes with",
    "results/variants/traces-*.pt": TRACES,
    "results/staging/*/runs/variants/traces-*.pt": TRACES + " (staged for the next book model)",
}


def allowed(path: str) -> bool:
    parts = path.split("/")
    return any(len(parts) == len(g := glob.split("/")) and all(map(fnmatchcase, parts, g)) for glob in ALLOWED)


def oversized(sizes: dict[str, int]) -> list[str]:
    """The files over LARGE that ALLOWED does not name, largest first."""
    return sorted((p for p, n in sizes.items() if n > LARGE and not allowed(p)), key=lambda p: -sizes[p])


def tracked_sizes() -> dict[str, int]:
    """Bytes of each tracked file as it is in the working tree (one deleted there and not yet staged: left out)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"not a git checkout, or no git ({e}): no tracked files to measure")
    paths = [p for p in out.decode().split("\0") if p]
    return {p: (ROOT / p).lstat().st_size for p in paths if (ROOT / p).is_file() or (ROOT / p).is_symlink()}


def test_no_large_file_outside_the_allowed_list():
    sizes = tracked_sizes()
    big = oversized(sizes)
    assert not big, ("tracked files over 2 MB that tests/test_tree.py's ALLOWED does not name (a run's weights "
                     "or state? .gitignore keeps those out): "
                     + ", ".join(f"{p} ({sizes[p] / 1e6:.1f} MB)" for p in big))


def test_the_whole_tree_is_small():
    sizes = tracked_sizes()
    staged = sum(n for p, n in sizes.items() if p.startswith(STAGING))
    total = sum(sizes.values()) - staged
    assert total <= TREE, f"the tracked files come to {total / 1e6:.1f} MB, over {TREE / 1e6:.0f} MB"
    assert staged <= STAGED, f"the staged runs come to {staged / 1e6:.1f} MB, over {STAGED / 1e6:.0f} MB"


def test_the_check_flags_a_large_file_the_list_does_not_name():
    sizes = {"results/training/x/model.safetensors": 3_000_000, "results/x.jsonl": LARGE,
             "tspd/zoo/tiny-arith/model.safetensors": 3_000_000, "tspd/zoo/a/b/model.safetensors": 3_000_000,
             "results/variants/traces-0123.pt": 12_000_000, "results/variants/tspd-0123.safetensors": 3_000_000,
             "results/staging/m/runs/variants/traces-0123.pt": 3_000_000}
    assert oversized(sizes) == ["results/training/x/model.safetensors", "tspd/zoo/a/b/model.safetensors",
                                "results/variants/tspd-0123.safetensors"]


MAX_LINES = 500   # the guide's limit: a module (or test file) readable in one sitting


def test_no_python_file_is_longer_than_one_sitting():
    long = {p: n for p in tracked_sizes() if p.endswith(".py")
            and (n := len((ROOT / p).read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these files (over {MAX_LINES} lines): {long}"
