"""The notebooks as a user meets them: in the book, parameterisable by papermill, stored executed.

nbval (run by the test command over notebooks/) re-executes them and compares the cells tagged
``nbval-check-output``; these tests check what nbval does not.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# every experiment notebook takes these (the shared parameter names of book/reproduce.md)
COMMON = ("model", "gen_length", "block_length", "device", "dtype", "seed")
RUN_TABLES = ("tasks", "limit", "steps", "batch_size", "results_dir")   # and these where benchmark runs are made


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    out = [toc["root"]]
    for part in toc.get("parts", []):
        for ch in part.get("chapters", []):
            out.append(ch["file"])
            out += [s["file"] for s in ch.get("sections", [])]
    return out


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def parameters_cell(path: Path) -> dict:
    tagged = [c for c in cells(path) if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: needs exactly one cell tagged 'parameters'"
    return tagged[0]


def test_there_is_a_notebook_per_paper_item():
    names = {p.stem for p in NOTEBOOKS}
    for n in range(1, 14):
        assert any(s.startswith(f"table{n:02d}_") for s in names), f"no notebook for Table {n}"
    for n in range(1, 6):
        assert any(s.startswith(f"figure{n:02d}_") for s in names), f"no notebook for Figure {n}"
    assert "pareto" in names


def test_every_notebook_is_in_the_book_and_every_page_exists():
    listed = toc_files()
    for p in NOTEBOOKS:
        assert f"notebooks/{p.stem}" in listed, f"{p.name} is not in _toc.yml"
    for f in listed:
        assert any((ROOT / f).with_suffix(s).exists() for s in (".md", ".ipynb")), f"_toc.yml lists missing {f}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_are_typed_and_documented_for_papermill(path):
    from papermill.inspection import inspect_notebook
    source = "".join(parameters_cell(path)["source"])
    assigned = [n.target.id for n in ast.parse(source).body if isinstance(n, ast.AnnAssign)]
    plain = [n for n in ast.parse(source).body if isinstance(n, ast.Assign)]
    assert not plain, f"{path.name}: every parameter needs a type annotation"
    found = inspect_notebook(str(path))
    # papermill silently skips a line whose comment holds '=': all assignments must be listed
    assert list(found) == assigned
    for name, p in found.items():
        assert p["help"].strip(), f"{path.name}: parameter {name} has no help comment"
        assert p["inferred_type_name"] not in ("None", ""), f"{path.name}: parameter {name} has no type"
    if path.stem not in ("train_embedded_model", "what_reproduces"):   # these two decode nothing of their own
        missing = [n for n in COMMON if n not in found]
        assert not missing, f"{path.name}: lacks the common parameters {missing}"
    if path.stem.startswith("table") or path.stem == "pareto":
        missing = [n for n in RUN_TABLES if n not in found]
        assert not missing, f"{path.name}: lacks the run parameters {missing}"


def defaults(path: Path) -> dict:
    """The parameter cell's default values, by name."""
    body = ast.parse("".join(parameters_cell(path)["source"])).body
    return {n.target.id: ast.literal_eval(n.value) for n in body if isinstance(n, ast.AnnAssign)}


# step_speed's model: random weights' shape; own_decodings': the models with the paper's Section-3 middle (issue 82)
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem not in ("step_speed", "own_decodings")],
                         ids=lambda p: p.stem)
def test_notebook_runs_the_books_model_on_its_task(path):
    """Switching the book's model is DEFAULT_MODEL plus these defaults (scripts/ship_model.sh's header): every
    notebook's model is the package's, its tasks are the one that model was trained on, its traces that
    task's traces split."""
    from tspd.models.loading import DEFAULT_MODEL, checkpoint_task
    from tspd.training.traces import own_traces
    found, task = defaults(path), checkpoint_task(DEFAULT_MODEL)
    for name in ("model", "model_name"):
        assert found.get(name, DEFAULT_MODEL) == DEFAULT_MODEL, f"{path.name}: {name} is not {DEFAULT_MODEL}"
    models = found.get("models", [DEFAULT_MODEL])   # the book's model first (Table 2: its backbones beside it)
    tasks = found.get("tasks", [task])   # [] (Table 2): each model its own task; else the book model's, for all
    assert models[0] == DEFAULT_MODEL, f"{path.name}: models"
    assert tasks == [] or (tasks == [task] and all(checkpoint_task(m) == task for m in models)), f"{path.name}: tasks"
    assert found.get("trace_source", own_traces(DEFAULT_MODEL)) == own_traces(DEFAULT_MODEL), f"{path.name}: traces"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_executed_without_errors(path):
    code = [c for c in cells(path) if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), f"{path.name}: not stored executed (run it in place)"
    counts = [c["execution_count"] for c in code]
    assert counts == sorted(counts), f"{path.name}: cells were executed out of order"
    for c in code:
        assert not [o for o in c.get("outputs", []) if o.get("output_type") == "error"], f"{path.name}: error output"
    checked = [c for c in code if "nbval-check-output" in c.get("metadata", {}).get("tags", [])]
    assert checked and all(c.get("outputs") for c in checked), f"{path.name}: no checked output for nbval"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_that_plots_stores_its_figures(path):
    """A notebook executed with a non-inline matplotlib backend (MPLBACKEND=Agg) silently loses its plots."""
    code = [c for c in cells(path) if c["cell_type"] == "code"]
    plots = any(k in "".join(c["source"]) for c in code for k in ("plt.", "book.bars(", "matplotlib"))
    images = sum("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", []))
    assert not plots or images, f"{path.name} draws plots but stores no image: re-run scripts/execute_notebooks.sh"
