"""Notebook helpers that more than one notebook uses (tspd.book): row labels, agreement of two runs, TPF in
the rows and tables, and the paper-vs-ours figure."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tspd import book
from tspd.eval.experiments import RunConfig, RunResult

from conftest import TEST_MODEL


def test_row_label_marks_rows_without_a_cache(monkeypatch):
    assert book.row_label("Vanilla") == "Vanilla"
    assert book.row_label("F-dLLM") == "F-dLLM"                  # decodes with its dual cache
    assert book.row_label("Prophet †") == "Prophet †"            # already marked
    assert book.row_label("Ours") == "Ours"
    assert book.row_label("F-dLLM", "Fast-dLLM") == "Fast-dLLM"  # Table 3 spells it out
    monkeypatch.setitem(book.METHODS, "Plain", dict(controller="fast-dllm"))
    assert book.row_label("Plain") == "Plain †"


def test_agreement_counts_common_problems():
    def run(rows) -> RunResult:
        samples = [dict(zip(("id", "output", "extracted"), r)) for r in rows]
        return RunResult(RunConfig(model=TEST_MODEL, gen_length=64, block_length=32), samples, {}, Path("rows.jsonl"),
                         "cpu")

    ref = run([("a", "x #### 1", "1"), ("b", "y #### 2", "2"), ("c", "z #### 3", "3")])
    other = run([("a", "x #### 1", "1"), ("b", "w #### 2", "2"), ("d", "q", None)])
    assert book.agreement(ref, other) == {"n": 2, "identical output (%)": 50.0, "identical answer (%)": 100.0}


def test_agreement_compares_the_whole_answer_where_the_task_grades_it():
    """roster's grade reads the whole plan: the same final line with another plan is another answer."""
    def run(rows) -> RunResult:
        samples = [dict(zip(("id", "output", "extracted"), r)) for r in rows]
        return RunResult(RunConfig(model=TEST_MODEL, task="roster", gen_length=64, block_length=32), samples, {},
                         Path("rows.jsonl"), "cpu")

    day = "On day 1 they will {} and {}.\n#### 1"
    ref = run([("a", day.format("cook", "wash"), "1"), ("b", day.format("cook", "wash"), "1")])
    other = run([("a", day.format("cook", "wash") + "  ", "1"), ("b", day.format("wash", "cook"), "1")])
    assert book.agreement(ref, other) == {"n": 2, "identical output (%)": 0.0, "identical answer (%)": 50.0}


def test_a_notebook_reads_its_run_and_study_from_its_parameter_cell():
    from tspd import book
    from tspd.training.variants import Study
    params = dict(model=TEST_MODEL, limit=0, gen_length=0, block_length=0, steps=0, device="cpu", dtype="",
                  seed=0, batch_size=4, trace_prompts=12, threads=2, tasks=["arith"])
    base = book.base_run(params)
    assert base == book.base_run(params, batch_size=4) and base.limit is None and base.dtype == "float32"
    assert base.key == book.base_run(dict(model=TEST_MODEL, batch_size=4)).key     # unset means default
    assert book.base_run(params, gen_length=32, block_length=32).steps == 32
    study = Study.from_parameters(params, store="here")
    assert (study.trace_prompts, study.store, study.epochs) == (12, "here", Study().epochs)


def test_rows_carry_tpf_from_the_stored_rows():
    samples = [{"id": "a", "correct": True, "gen_tokens": 30, "nfe": 2}, {"id": "b", "correct": True, "gen_tokens": 10, "nfe": 8}]
    run = SimpleNamespace(samples=samples, config=None, key="k",
                          summary={"accuracy": 100.0, "tps": 10.0, "nfe_mean": 5.0, "n": 2})
    (row,) = book.rows({"x": run})
    assert row["tpf"] == 4.0 and row["nfe_mean"] == 5.0


def test_formatted_formats_each_column_as_a_listing_and_marks_what_a_row_lacks():
    rows = [{"method": "Ours", "accuracy": 87.25, "nfe_mean": 12.0, "tpf": 2.666, "n": 8, "params": 96},
            {"method": "Vanilla", "accuracy": 50.0, "nfe_mean": 32.0, "tpf": 1.0, "n": 8, "params": None}]
    table = book.formatted(rows, {"method": "method", **book.MEASURES, "params": "params:d"}, caption="c")
    assert table.columns == ["method", "accuracy, %", "forwards a problem (NFE)", "TPF", "n", "params"]
    assert table[0] == {"method": "Ours", "accuracy, %": "87.2", "forwards a problem (NFE)": "12.0", "TPF": "2.67",
                        "n": "8", "params": "96"}
    assert table.caption == "c" and "| Vanilla | 50.0 | 32.0 | 1.00 | 8 | – |" in table.to_markdown()


def test_side_by_side_adds_our_tpf_column():
    from tspd.book.reported import side_by_side
    table = side_by_side([{"method": "A", "tps": 1.0, "setting": {}}], [{"method": "A", "tps": 2.0, "tpf": 3.5}],
                         metrics=("tps",))
    assert table.columns == ["method", "paper: TPS", "ours: TPS", "ours: TPF"]
    assert table[0]["ours: TPF"] == 3.5


def test_paper_vs_ours_takes_speedups_or_tps_over_the_reference():
    import matplotlib
    matplotlib.use("Agg")
    from tspd.book.figures import speedup_or_ratio
    rows = [{"method": "Vanilla", "tps": 2.0}, {"method": "X", "tps": 6.0}, {"method": "Y", "speedup": 5.0, "tps": 1.0}]
    assert speedup_or_ratio(rows, "method", "Vanilla") == [1.0, 3.0, 5.0]
    assert speedup_or_ratio(rows, "method", None) == [None, None, 5.0]
    paper = [{"method": "Vanilla", "tps": 1.0, "accuracy": 80.0, "setting": {"task": "gsm8k"}},
             {"method": "X", "tps": 4.0, "accuracy": 79.0, "setting": {"task": "gsm8k"}},
             {"method": "X", "tps": 5.0, "accuracy": 30.0, "setting": {"task": "math"}}]
    ours = [{"method": "Vanilla", "task": "arith", "tps": 2.0, "accuracy": 98.0},
            {"method": "X", "task": "arith", "tps": 20.0, "accuracy": 90.0}]
    fig = book.paper_vs_ours(paper, ours, panel="task", ours_title="ours")
    drawn = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title().split(": ")[-1] for ax in drawn] == ["task gsm8k", "task math", "task arith"]
    xs = [[line.get_xdata()[0] for line in ax.get_lines() if line.get_marker() in ("s", "o")] for ax in drawn]
    assert xs == [[1.0, 4.0], [], [1.0, 10.0]]      # math has no Vanilla row: no speedup to draw
    assert [ax.get_xscale() for ax in drawn] == ["linear"] * 3


def test_paper_vs_ours_titles_each_panel_and_logs_a_wide_speedup_axis():
    import matplotlib
    matplotlib.use("Agg")
    ours = [{"method": "Vanilla", "model": "a", "tps": 1.0, "accuracy": 99.0},
            {"method": "Prophet", "model": "a", "tps": 250.0, "accuracy": 0.0},
            {"method": "Vanilla", "model": "b", "tps": 1.0, "accuracy": 99.0},
            {"method": "X", "model": "b", "tps": 3.0, "accuracy": 98.0}]
    fig = book.paper_vs_ours([], ours, panel="model", ours_title={"a": "ours (a, n=2)", "b": "ours (b, n=9)"})
    drawn = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in drawn] == ["ours (a, n=2): model a", "ours (b, n=9): model b"]
    assert [ax.get_xscale() for ax in drawn] == ["log", "linear"]
