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
    import json
    sb = switch_book()
    stage = "results/staging/m/"
    fill(tmp_path, {"results/runs/old.json": json.dumps({"key": "old", "config": {"model": "old"}}), "results/variants/old.pt": "", "results/claims/t01.json": "old",
                    "results/controller_table/old.jsonl": "", "results/embedded_controllers.json": "old",
                    "results/cache_agreement.json": "old", "results/cache_agreement.samples.jsonl": "old",
                    "results/gpu/H200.json": "kept", "results/pareto.json": "old", stage + "runs/pareto.json": "new",
                    stage + "runs/new.json": "{}", stage + "runs/variants/new.pt": "", stage + "claims/t01.json": "new",
                    stage + "controller_table/new.jsonl": "", stage + "embedded_controllers.json": "new",
                    stage + "cache_agreement.json": "new", stage + "cache_agreement.samples.jsonl": "new"})
    moved = sb.move_staged(tmp_path, "m", "old")
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
        switch_book().move_staged(tmp_path, "m", "old")
    assert (tmp_path / "results" / "runs" / "old.json").exists()
    assert (tmp_path / "results" / "staging" / "m" / "runs" / "new.json").exists()


def test_the_books_runs_of_other_models_stay_and_the_old_models_go(tmp_path):
    """Table 2's backbones and the own-decodings page's models keep their runs through the switch; the old book
    model's runs go, and a run the staging holds too is the staged one."""
    import json
    sb = switch_book()
    side = lambda key, model: {f"{key}.json": json.dumps({"key": key, "config": {"model": model}}),   # noqa: E731
                               f"{key}.jsonl": model, f"{key}.summary.json": "{}"}
    book, stage = tmp_path / "book", tmp_path / "stage"
    fill(book, {**side("aaa", "old"), **side("bbb", "dream"), **side("ccc", "new"), "bbb.stale-1.jsonl": "x"})
    fill(stage, {**side("ccc", "new"), "ccc.jsonl": "staged"})
    assert sb.carry_runs(book, stage, "old") == ["bbb"]
    assert sorted(p.name for p in stage.iterdir()) == ["bbb.json", "bbb.jsonl", "bbb.summary.json", "ccc.json",
                                                        "ccc.jsonl", "ccc.summary.json"]
    assert (stage / "ccc.jsonl").read_text() == "staged"


def test_the_regime_page_keeps_the_old_model_beside_the_new_one():
    sb = switch_book()
    cell = 'model: str = "a"  # x\ncompare: list = ["c", "b"]  # y\ntasks: list = ["ta"]  # z'
    assert sb.switched_cell(cell, "a", "b", "ta", "tb") == ('model: str = "b"  # x\ncompare: list = ["c", "a"]  # y\n'
                                                            'tasks: list = ["tb"]  # z')
    empty = 'model: str = "a"\ncompare: list = []  # y'
    assert sb.switched_cell(empty, "a", "b", "ta", "tb") == 'model: str = "b"\ncompare: list = ["a"]  # y'


def test_runs_of_moved_controller_weights_are_named_by_their_new_path(tmp_path):
    """A staged variant's runs name its weights by their staged path, which their key and their rows' config
    id hash: after the move they are renamed as the book would name them, rows kept, so nothing decodes again."""
    import json

    from conftest import TEST_MODEL
    from tspd.eval.job import EvalJob, RunConfig
    from tspd.records.rows import config_id
    staged, moved = "<repo>/results/staging/m/runs/variants/", "<repo>/results/variants/"
    run = RunConfig(model=TEST_MODEL, controller="tspd", controller_kwargs={"weights": staged + "tspd-1"}, limit=2)
    plain = RunConfig(model=TEST_MODEL, controller="fast-dllm")
    want = run.replace(controller_kwargs={"weights": moved + "tspd-1"})
    for config in (run, plain):
        rows = [{"id": f"p{i}", "output": "x", "config": config_id(EvalJob(config, "x").row_config())} for i in (0, 1)]
        fill(tmp_path, {f"{config.key}.json": json.dumps({"key": config.key, "config": config.keyed()}),
                        f"{config.key}.jsonl": "".join(json.dumps(r) + "\n" for r in rows),
                        f"{config.key}.summary.json": json.dumps({"n": 2, "out": "old"})})
    fill(tmp_path, {f"{want.key}.jsonl": "a partial rerun under the new key\n"})
    assert switch_book().rekey_runs(tmp_path, staged, moved) == [f"{run.key} -> {want.key}"]
    assert not any(tmp_path.glob(f"{run.key}*")) and (tmp_path / f"{plain.key}.jsonl").exists()   # others untouched
    meta = json.loads((tmp_path / f"{want.key}.json").read_text())
    assert meta["key"] == want.key == RunConfig.from_dict(meta["config"]).key
    rows = [json.loads(line) for line in (tmp_path / f"{want.key}.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["p0", "p1"]
    assert {r["config"] for r in rows} == {config_id(EvalJob(want, "x").row_config())}
    assert json.loads((tmp_path / f"{want.key}.summary.json").read_text())["out"].endswith(f"{want.key}.jsonl")


def test_the_book_model_is_data_the_switch_rewrites():
    """The default model is one JSON value (no regex over source): what the switch writes is what loads."""
    import json

    from tspd.models.loading import BOOK_MODEL_FILE, DEFAULT_MODEL
    assert switch_book().BOOK_MODEL == BOOK_MODEL_FILE and json.loads(BOOK_MODEL_FILE.read_text()) == {"model": DEFAULT_MODEL}
    assert "DEFAULT_MODEL = \"" not in (BOOK_MODEL_FILE.parents[1] / "models" / "loading.py").read_text()
