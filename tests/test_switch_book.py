"""scripts/switch_book.py --staged: the staged runs take the place of the book's, all or nothing."""
from __future__ import annotations

import importlib.util

import pytest

from tspd.provenance import REPO_ROOT


def switch_book():
    spec = importlib.util.spec_from_file_location("switch_book", REPO_ROOT / "scripts" / "switch_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fill(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_staged_runs_replace_the_books_and_the_staging_goes(tmp_path):
    sb = switch_book()
    stage = "results/staging/m/"
    fill(tmp_path, {"results/runs/old.json": "", "results/variants/old.pt": "", "results/claims/t01.json": "old",
                    "results/controller_table/old.jsonl": "", "results/embedded_controllers.json": "old",
                    "results/cache_agreement.json": "old", "results/cache_agreement.samples.jsonl": "old",
                    "results/gpu/H200.json": "kept", "results/pareto.json": "old", stage + "runs/pareto.json": "new",
                    stage + "runs/new.json": "", stage + "runs/variants/new.pt": "", stage + "claims/t01.json": "new",
                    stage + "controller_table/new.jsonl": "", stage + "embedded_controllers.json": "new",
                    stage + "cache_agreement.json": "new", stage + "cache_agreement.samples.jsonl": "new"})
    moved = sb.move_staged(tmp_path, "m")
    res = tmp_path / "results"
    assert len(moved) == len(sb.staged_parts("m")) and not (res / "staging" / "m").exists()
    assert sorted(p.name for p in (res / "runs").iterdir()) == ["new.json"]        # variants moved out first
    assert sorted(p.name for p in (res / "variants").iterdir()) == ["new.pt"]
    assert (res / "claims" / "t01.json").read_text() == "new" and (res / "gpu" / "H200.json").read_text() == "kept"
    assert [p.name for p in (res / "controller_table").iterdir()] == ["new.jsonl"]
    assert all((res / f).read_text() == "new" for f in ("embedded_controllers.json", "cache_agreement.json",
                                                        "pareto.json"))


def test_an_unfinished_staging_moves_nothing(tmp_path):
    fill(tmp_path, {"results/runs/old.json": "", "results/staging/m/runs/new.json": "",
                    "results/staging/m/claims/t01.json": ""})
    with pytest.raises(FileNotFoundError, match="lacks results/staging/m/runs/variants, results/staging/m/embedded"):
        switch_book().move_staged(tmp_path, "m")
    assert (tmp_path / "results" / "runs" / "old.json").exists()
    assert (tmp_path / "results" / "staging" / "m" / "runs" / "new.json").exists()
