"""Text about a model's accuracy comes from its record (tspd.book.accuracy over tspd.records.train_lm_evals)."""
from __future__ import annotations

import json
import shutil

import pytest

from tspd.book import accuracy as book_accuracy, spans
from tspd.models.loading import DEFAULT_MODEL, resolve_path
from tspd.provenance import REPO_ROOT


def test_the_embedded_models_accuracy_is_its_records_vanilla_row():
    acc = book_accuracy.reference_accuracy("tiny-arith")
    rows = json.loads((resolve_path("tiny-arith") / "evals.json").read_text())
    vanilla = next(r for r in rows if r["policy"] == "vanilla" and (r.get("tokens_per_step") or 1) == 1)
    assert (acc.correct, acc.n, acc.source) == (vanilla["correct"], vanilla["n"], "tspd/zoo/tiny-arith/evals.json")
    lo, hi = acc.interval
    assert f"{100 * acc.share:.1f} % of the {acc.n} held-out problems" in book_accuracy.accuracy_text(acc)
    assert f"{100 * lo:.1f}-{100 * hi:.1f} %" in book_accuracy.accuracy_text(acc)


@pytest.mark.parametrize("page", ["book/intro.md", "book/status.md"])   # the pages that show it
def test_pages_show_the_accuracy_of_the_record(page):
    text = (REPO_ROOT / page).read_text()
    said = [body for name, body in spans.named_spans(text) if name == "model-accuracy"]
    assert said, f"{page}: no <!-- model-accuracy --> span"
    acc = book_accuracy.reference_accuracy(DEFAULT_MODEL)   # the pages show the book's model's accuracy
    lo, hi = acc.interval
    row = f"| right, 1 token a step | {100 * acc.share:.1f} % | {100 * lo:.1f}-{100 * hi:.1f} % | {acc.n} |"
    assert all(row in body for body in said), f"{page} is stale: run python -m tspd fill-records"


def test_the_note_follows_the_record(tmp_path):
    ckpt = tmp_path / "m"
    shutil.copytree(resolve_path("tiny-arith"), ckpt, ignore=shutil.ignore_patterns("*.safetensors", "controllers",
                                                                                     "regime.json"))
    for correct, weak in ((40, True), (450, False)):
        (ckpt / "evals.json").write_text(json.dumps([{"policy": "fast-dllm", "threshold": 0.9, "n": 500, "correct": 1},
                                                     {"policy": "vanilla", "threshold": None, "n": 500,
                                                      "correct": correct, "tokens_per_step": 1}]))
        note = book_accuracy.model_note(str(ckpt))
        assert note.startswith(f"The `m` checkpoint answers {100 * correct / 500:.1f} % of the 500 held-out problems")
        assert ("little information" in note) is weak
    (ckpt / "evals.json").unlink()
    assert book_accuracy.model_note(str(ckpt)) == "" and book_accuracy.model_note("/no/such/model") == ""


def test_every_notebook_prints_the_note_of_the_current_record():
    note = book_accuracy.model_note(DEFAULT_MODEL)   # the notebooks run the book's model (their parameter cells')
    printed = 0
    for nb in sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        for cell in cells:
            if "model_note" not in "".join(cell.get("source", [])):
                continue
            text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("name") == "stdout")
            assert note in text, f"{nb.name}: re-execute it (bash scripts/execute_notebooks.sh {nb.relative_to(REPO_ROOT)})"
            printed += 1
    assert printed >= 15
    sources = "".join("".join(c.get("source", [])) for nb in (REPO_ROOT / "notebooks").glob("*.ipynb")
                      for c in json.loads(nb.read_text())["cells"])
    assert "on_cpu_note" not in sources and "provisional CPU-trained" not in sources


def test_a_model_without_a_final_evaluation_is_stated_from_its_regime_record(tmp_path):
    rows = json.loads((resolve_path("tiny-roster") / "regime.json").read_text())["rows"]
    acc = book_accuracy.reference_accuracy("tiny-roster")
    assert (acc.correct, acc.n, acc.source) == (rows["vanilla"]["correct"], rows["vanilla"]["n"],
                                                "tspd/zoo/tiny-roster/regime.json")
    steps = book_accuracy.reference_steps("tiny-roster")
    assert [(r["tokens_per_step"], r["correct"]) for r in steps] == \
        [(k, rows[f"fixed{k}"]["correct"]) for k in (8, 4, 2)]
    ckpt = tmp_path / "m"   # neither record: nothing to state
    shutil.copytree(resolve_path("tiny-roster"), ckpt, ignore=shutil.ignore_patterns("*.safetensors", "controllers",
                                                                                      "regime.json"))
    assert book_accuracy.reference_accuracy(str(ckpt)) is None and book_accuracy.reference_steps(str(ckpt)) == []
