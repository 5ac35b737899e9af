"""Text from records: every measured number the README and the book's introduction state is written
from the record that holds it (tspd.book.prose), and these tests fail when a stated number and its
record disagree."""
from __future__ import annotations

import dataclasses
import json
import re
import shutil

import pytest

from tspd.book import prose, spans
from tspd.models.loading import resolve_path
from tspd.provenance import REPO_ROOT
from tspd.records import fresh_clone, lmeval_example

REQUIRED = {   # the spans each page must keep (a removed marker would silently end the check)
    "README.md": {"fresh-clone-times", "headline"},
    "book/intro.md": {"model-size", "model-accuracy", "model-lines", "controller-overview"},
    "book/status.md": {"model-size", "model-accuracy", "model-lines", "claims-summary", "gpu-speed", "regime-summary",
                       "regime-summary-tiny-arith-256", "loop-overhead", "dynamics-summary"},
    "book/controllers.md": {"controller-comparisons", "cache-agreement"},
    "book/lmeval.md": {"lmeval-numbers", "lmeval-times"},
}


@pytest.mark.parametrize("page", spans.PAGES)
def test_every_marked_span_says_what_its_record_says(page):
    text = (REPO_ROOT / page).read_text()
    names = {name for name, _ in spans.named_spans(text)}
    assert REQUIRED[page] <= names, f"{page}: missing spans {REQUIRED[page] - names}"
    for name, body in spans.named_spans(text):
        assert body == prose.FACTS[name](), f"{page}: <!-- {name} --> is stale: run python -m tspd fill-records"


def test_the_rewriter_would_change_nothing(capsys):
    """``fill-records --diff`` on the committed pages: no diff (every span is what its record says)."""
    from tspd import cli
    assert cli.main(["fill-records", "--diff"]) == 0 and capsys.readouterr().out == ""


@pytest.mark.parametrize("page", spans.PAGES)
def test_no_inline_span_starts_a_line(page):
    """A line that starts with an HTML comment is an HTML block in Markdown: the text after the marker would
    show raw (backticks and bold unrendered) and break the paragraph. Inline spans follow other text."""
    starts = [line[:60] for line in (REPO_ROOT / page).read_text().splitlines()
              if re.match(r"\s*<!-- [a-z0-9-]+ -->\S", line)]
    assert not starts, f"{page}: spans that start a line: {starts}"


def _outside_spans(text: str) -> list[str]:
    """The page's prose lines outside marked spans, code blocks and tables."""
    text = spans.MARK.sub("", text)
    out, code = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            code = not code
        elif not code and not line.lstrip().startswith("|"):
            out.append(line)
    return out


@pytest.mark.parametrize("page", spans.PAGES)
def test_no_measured_share_or_gap_outside_a_span(page):
    """A percentage (other than the 95 % of an interval) or a gap in points stated by hand is a number
    no record backs: it belongs in a span or not on the page."""
    bad = [line for line in _outside_spans((REPO_ROOT / page).read_text())
           if re.search(r"\b(?!95 %)\d+(\.\d+)? ?%|\d+(\.\d+)? points", line)]
    assert not bad, f"{page}: numbers without a record: {bad}"


def test_a_fact_follows_its_record(tmp_path):
    """Change a record and the text changes with it (so the span check above can fail)."""
    ckpt = tmp_path / "m"
    shutil.copytree(resolve_path("tiny-arith"), ckpt, ignore=shutil.ignore_patterns("controllers"))
    before = prose.model_lines(str(ckpt))
    probes = json.loads((ckpt / "probes.json").read_text())
    probes["cf_next_copied"] = 0.5
    (ckpt / "probes.json").write_text(json.dumps(probes))
    after = prose.model_lines(str(ckpt))
    assert before != after and f"in {round(0.5 * probes['cf_n'])} of {probes['cf_n']} problems" in after

    record = lmeval_example.load()
    record.runs["lm_eval"] = dataclasses.replace(record.runs["lm_eval"], accuracy=0.16)
    assert "`lm_eval` accuracy 0.16" in prose.lmeval_numbers(record)


def test_a_table_of_another_model_says_which_model_it_is_of():
    from tspd.models.loading import DEFAULT_MODEL
    assert prose._measured_on(DEFAULT_MODEL, 256) == ""
    said = prose._measured_on("other-model", 64)
    assert "`other-model`, window 64" in said and DEFAULT_MODEL in said


def test_filled_rewrites_only_marked_spans_and_refuses_unknown_names():
    text = "a <!-- model-size -->old<!-- /model-size --> b"
    assert spans.filled(text) == f"a <!-- model-size -->{prose.model_size()}<!-- /model-size --> b"
    with pytest.raises(KeyError, match="unknown marked span"):
        spans.filled("<!-- no-such-fact -->x<!-- /no-such-fact -->")


def test_the_lines_are_needed_only_where_the_record_shows_a_cost(tmp_path):
    """A model whose one-forward final and coarser steps keep vanilla's accuracy is not said to need its lines."""
    ckpt = tmp_path / "m"
    shutil.copytree(resolve_path("tiny-arith"), ckpt, ignore=shutil.ignore_patterns("controllers"))
    assert "It needs those lines" in prose.model_lines(str(ckpt))
    evals = json.loads((ckpt / "evals.json").read_text())
    best = next(r for r in evals if r["policy"] == "vanilla" and r.get("tokens_per_step") == 1)
    for r in evals:
        if r["policy"] == "vanilla":
            r["correct"] = best["correct"]
    (ckpt / "evals.json").write_text(json.dumps(evals))
    probes = json.loads((ckpt / "probes.json").read_text())
    probes["one_pass_final"] = best["correct"] / best["n"]
    (ckpt / "probes.json").write_text(json.dumps(probes))
    text = prose.model_lines(str(ckpt))
    assert "It does not need them to be right" in text and "cost it no accuracy its intervals show" in text


def test_a_roster_models_lines_come_from_its_line_probes_and_its_regime_record(tmp_path):
    ckpt = tmp_path / "m"
    shutil.copytree(resolve_path("tiny-roster"), ckpt, ignore=shutil.ignore_patterns("*.safetensors", "controllers"))
    text = prose.model_lines(str(ckpt))
    assert "two masked chores" in text and "It needs those lines" in text and "regime.json" in text
    log = (ckpt / "eval_log.csv").read_text().splitlines()
    header = log[0].split(",")
    last = log[-1].split(",")
    last[header.index("probe_pair")] = "0.25"
    (ckpt / "eval_log.csv").write_text("\n".join(log[:-1] + [",".join(last)]) + "\n")
    assert "two masked chores in 25.0 %" in prose.model_lines(str(ckpt))


def test_the_regime_summary_says_what_the_regime_record_says(tmp_path):
    """Each figure of the record is stated with its interval, and a target is met only on its whole interval."""
    ckpt = tmp_path / "m"
    shutil.copytree(resolve_path("tiny-arith"), ckpt, ignore=shutil.ignore_patterns("controllers"))
    record = json.loads((ckpt / "regime.json").read_text())
    text = prose.regime_summary(str(ckpt))
    assert f"makes {record['rows']['fast']['tpf']:.2f} non-EOS tokens per forward" in text
    assert "Missed: vanilla 75 to 95 %" in text and "the dual cache <= 2 points for vanilla" in text   # 100 %: above
    record["rows"]["vanilla_dual"] = record["rows"]["vanilla"]          # a dual cache that costs vanilla nothing
    (ckpt / "regime.json").write_text(json.dumps(record))
    assert "the dual cache costs vanilla 0.0, " in prose.regime_summary(str(ckpt))
    (ckpt / "regime.json").unlink()
    assert prose.regime_summary(str(ckpt)) == "its record has no regime figures yet"


def test_the_loop_overhead_says_which_settings_meet_their_targets(tmp_path):
    row = dict(policy="tspd", ce=True, forwards_per_call=3.0, target=0.15)
    rows = [dict(row, cache="none", rest_of_forward=0.1, meets_target=True),
            dict(row, cache="dual", rest_of_forward=0.2, meets_target=False),
            dict(row, cache="prefix", rest_of_forward=0.1504, meets_target=False),
            dict(row, policy="credit", ce=False, cache="none", rest_of_forward=0.5, target=None, meets_target=None)]
    (tmp_path / "loop-x.json").write_text(json.dumps(
        dict(model="m", gen_length=64, block_length=32, device="a CPU", revision="abc", rows=rows)))
    said = prose.loop_overhead("loop-x.json", tmp_path)
    assert "TSPD + CE 10.0 / 20.0 / 15.04 % (none / dual / prefix; target 15 %)" in said and "Credit" not in said
    assert "targets met: TSPD + CE / none; missed: TSPD + CE / dual, TSPD + CE / prefix" in said


def test_the_fresh_clone_sentence_gives_the_venv_and_the_tests_apart():
    rec = {"command": "bash scripts/time_fresh_clone.sh", "revision": "abc1234", "date": "2026-11-27", "device": "AMD EPYC",
           "cores": 2, "load_average_before": 0.1, "venv_seconds": 150, "tests_seconds": 450, "tests_exit": 0,
           "tests_summary": "1090 passed, 2 skipped in 440.0s (0:07:20)", "book_seconds": 240, "shared": False}
    text = prose.fresh_clone_times(fresh_clone.FreshClone(**rec))
    assert "took 7.5 minutes after creating `.venv` (2.5 minutes; 10.0 in all; 1090 passed, 2 skipped" in text
    assert "no `../shared` beside the clone" in text and "4.0 minutes" in text


def test_the_readmes_figure_is_drawn_from_the_regime_records(tmp_path):
    """The README's picture exists where it links it, and fill-records' drawing of it runs from the stored records
    alone (nothing measured: no model loads)."""
    from tspd.book.regime import README_FIGURE, readme_figure
    assert f"]({README_FIGURE.relative_to(REPO_ROOT)})" in (REPO_ROOT / "README.md").read_text()
    assert README_FIGURE.is_file()
    drawn = readme_figure(tmp_path / "p.png")
    assert drawn.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
