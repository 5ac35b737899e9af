"""Notebook helpers that more than one notebook uses (tspd.book): row labels and agreement of two runs."""
from __future__ import annotations

from types import SimpleNamespace

from tspd import book


def test_row_label_marks_rows_without_a_cache(monkeypatch):
    assert book.row_label("Vanilla") == "Vanilla"
    assert book.row_label("F-dLLM") == "F-dLLM"                  # decodes with its dual cache
    assert book.row_label("Prophet †") == "Prophet †"            # already marked
    assert book.row_label("Ours") == "Ours"
    assert book.row_label("F-dLLM", "Fast-dLLM") == "Fast-dLLM"  # Table 3 spells it out
    monkeypatch.setitem(book.METHODS, "Plain", dict(policy="fast-dllm"))
    assert book.row_label("Plain") == "Plain †"


def test_agreement_counts_common_problems():
    run = lambda rows: SimpleNamespace(samples=[dict(zip(("id", "output", "extracted"), r)) for r in rows])  # noqa: E731
    ref = run([("a", "x #### 1", "1"), ("b", "y #### 2", "2"), ("c", "z #### 3", "3")])
    other = run([("a", "x #### 1", "1"), ("b", "w #### 2", "2"), ("d", "q", None)])
    assert book.agreement(ref, other) == {"n": 2, "identical output (%)": 50.0, "identical answer (%)": 100.0}
