"""The linter the project is configured with (``[tool.ruff]`` in pyproject.toml) finds nothing in the
package, its tests or its scripts, so every ``noqa`` left in the code is one ruff needs."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff_command() -> list[str] | None:
    """ruff beside this interpreter (the test extra installs it into the venv), else on PATH."""
    beside = Path(sys.executable).with_name("ruff")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("ruff")
    return [found] if found else None


def test_ruff_finds_nothing_in_the_package_the_tests_and_the_scripts():
    ruff = ruff_command()
    if ruff is None:
        pytest.skip("ruff is not installed: pip install -e '.[test]' (or pip install ruff) to run the linter")
    done = subprocess.run([*ruff, "check", "--no-cache", "--output-format", "concise", "tspd", "tests", "scripts"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"ruff check tspd tests scripts:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
