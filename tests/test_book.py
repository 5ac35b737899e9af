"""Notebook helpers that more than one notebook uses (tspd.book): row labels and agreement of two runs."""
from __future__ import annotations

from pathlib import Path

from tspd import book
from tspd.eval.experiments import RunConfig, RunResult


def test_row_label_marks_rows_without_a_cache(monkeypatch):
    assert book.row_label("Vanilla") == "Vanilla"
    assert book.row_label("F-dLLM") == "F-dLLM"                  # decodes with its dual cache
    assert book.row_label("Prophet †") == "Prophet †"            # already marked
    assert book.row_label("Ours") == "Ours"
    assert book.row_label("F-dLLM", "Fast-dLLM") == "Fast-dLLM"  # Table 3 spells it out
    monkeypatch.setitem(book.METHODS, "Plain", dict(policy="fast-dllm"))
    assert book.row_label("Plain") == "Plain †"


def test_agreement_counts_common_problems():
    def run(rows) -> RunResult:
        samples = [dict(zip(("id", "output", "extracted"), r)) for r in rows]
        return RunResult(RunConfig(gen_length=64, block_length=32), samples, {}, Path("rows.jsonl"), "cpu")

    ref = run([("a", "x #### 1", "1"), ("b", "y #### 2", "2"), ("c", "z #### 3", "3")])
    other = run([("a", "x #### 1", "1"), ("b", "w #### 2", "2"), ("d", "q", None)])
    assert book.agreement(ref, other) == {"n": 2, "identical output (%)": 50.0, "identical answer (%)": 100.0}


def test_a_notebook_reads_its_run_and_study_from_its_parameter_cell():
    from tspd import book
    from tspd.training.variants import Study
    params = dict(model="tiny-arith", limit=0, gen_length=0, block_length=0, steps=0, device="cpu", dtype="",
                  seed=0, batch_size=4, trace_prompts=12, threads=2, tasks=["arith"])
    base = book.base_run(params)
    assert base == book.base_run(params, batch_size=4) and base.limit is None and base.dtype == "float32"
    assert base.key == book.base_run(dict(model="tiny-arith", batch_size=4)).key     # unset means default
    assert book.base_run(params, gen_length=32, block_length=32).steps == 32
    study = Study.from_parameters(params, store="here")
    assert (study.trace_prompts, study.store, study.epochs) == (12, "here", Study().epochs)
