"""Tables from records: every measured number the README and the book's pages show sits in a marked span whose
table is written from the record that holds it (tspd.book.facts, tspd.book.spans); these tests fail when a span and
its record disagree, and check what each table does with its record."""
from __future__ import annotations

import dataclasses
import json
import re
import shutil

import pytest

from tspd.book import controller_table, facts, spans
from tspd.models.loading import DEFAULT_MODEL, resolve_path
from tspd.provenance import REPO_ROOT
from tspd.measures import cache_agreement, lmeval_example
from tspd.records import fresh_clone

REQUIRED = {   # the spans each page must keep (a removed marker would silently end the check)
    "README.md": {"fresh-clone-times", "headline"},
    "book/intro.md": {"model-accuracy", "regime-targets", "controller-overview"},
    "book/status.md": {"status-dashboard", "model-accuracy", "regime-targets", "controller-overview",
                       "claims-summary", "claims-decided", "dynamics-table", "oracle-shifted", "gpu-speed",
                       "gpu-forward", "loop-overhead", "fresh-clone-times"},
    "book/controllers.md": {"controller-comparisons", "cache-agreement"},
    "book/lmeval.md": {"lmeval-example"},
}


def rows_of(table: str) -> dict[str, list[str]]:
    """A Markdown table's body rows by their first cell: the other cells, stripped."""
    out = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        out[cells[0]] = cells[1:]
    return out


@pytest.mark.parametrize("page", spans.PAGES)
def test_every_marked_span_is_its_records_table(page):
    text = (REPO_ROOT / page).read_text()
    names = {name for name, _ in spans.named_spans(text)}
    assert REQUIRED[page] <= names, f"{page}: missing spans {REQUIRED[page] - names}"
    for name, body in spans.named_spans(text):
        assert body == spans.body(name), f"{page}: <!-- {name} --> is stale: run python -m tspd fill-records"


def test_the_rewriter_would_change_nothing(capsys):
    """``fill-records --diff`` on the committed pages: no diff (every span is what its record says)."""
    from tspd import cli
    assert cli.main(["fill-records", "--diff"]) == 0 and capsys.readouterr().out == ""


@pytest.mark.parametrize("page", spans.PAGES)
def test_every_marker_stands_on_its_own_line(page):
    """A table is a Markdown block: text beside a marker on its line would render raw (an HTML block) or glue the
    table to a paragraph."""
    text = (REPO_ROOT / page).read_text()
    markers = re.findall(r"^.*<!-- /?[a-z0-9-]+ -->.*$", text, re.M)
    assert markers and all(re.fullmatch(r"<!-- /?[a-z0-9-]+ -->", m) for m in markers), \
        [m[:60] for m in markers if not re.fullmatch(r"<!-- /?[a-z0-9-]+ -->", m)]


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


def paragraphs(text: str) -> list[str]:
    """A page's paragraphs and list items (each item on its own) outside code, tables, markers and fences."""
    out, current, code = [], [], False
    for line in text.splitlines() + [""]:
        bare = line.strip()
        if bare.startswith("```"):
            code = not code
        starts = bare.startswith(("- ", "* ")) or re.match(r"\d+\. ", bare)
        if code or not bare or bare.startswith(("|", "<!--", ":::", "#")) or re.fullmatch(r"\(\S+\)=", bare) or starts:
            if current:
                out.append(" ".join(current))
            current = [bare.split(" ", 1)[1]] if starts and not code else []
        else:
            current.append(bare)
    return out


def test_no_paragraph_on_the_status_page_runs_past_80_words():
    long = [p[:60] for p in paragraphs((REPO_ROOT / "book" / "status.md").read_text()) if len(p.split()) > 80]
    assert not long, f"book/status.md: paragraphs over 80 words: {long}"
    assert [len(p.split()) for p in paragraphs("a b\nc d\n\n- e f g\n  i\n- h\n")] == [4, 4, 1]   # items apart


def test_filled_rewrites_only_marked_spans_and_refuses_unknown_names():
    text = "a\n<!-- fresh-clone-times -->\nold\n<!-- /fresh-clone-times -->\nb"
    assert spans.filled(text) == f"a\n<!-- fresh-clone-times -->{spans.body('fresh-clone-times')}<!-- /fresh-clone-times -->\nb"
    assert spans.filled(text, names={"headline"}) == text
    with pytest.raises(KeyError, match="unknown marked span"):
        spans.filled("<!-- no-such-fact -->x<!-- /no-such-fact -->")
    assert set(facts.FACTS) == set().union(*REQUIRED.values())   # every table is shown on some page


def _checkpoint(tmp_path, name: str, *ignore: str):
    ckpt = tmp_path / "m"
    shutil.copytree(resolve_path(name), ckpt, ignore=shutil.ignore_patterns("controllers", *ignore))
    return ckpt


def test_the_model_table_follows_its_record_and_marks_a_cost_only_below_vanillas_interval(tmp_path):
    from tspd.book.model_card import model_table, needs_lines
    ckpt = _checkpoint(tmp_path, "tiny-arith")
    rows = rows_of(model_table(str(ckpt)))
    assert rows["right, 8 tokens a step"][2:4] == ["500", "yes"] and needs_lines(str(ckpt))
    probes = json.loads((ckpt / "probes.json").read_text())
    probes["cf_next_copied"], probes["one_pass_final"] = 0.5, None       # a changed figure, a missing one
    (ckpt / "probes.json").write_text(json.dumps(probes))
    rows = rows_of(model_table(str(ckpt)))
    assert rows["line 1's altered result copied, the rest masked"][0] == f"50.0 % ({round(0.5 * probes['cf_n'])} of {probes['cf_n']})"
    assert rows["final right in one forward, whole window masked"][:2] == ["-", "-"]
    evals = json.loads((ckpt / "evals.json").read_text())
    best = next(r for r in evals if r["policy"] == "vanilla" and r.get("tokens_per_step") == 1)
    for r in evals:
        if r["policy"] == "vanilla":
            r["correct"] = best["correct"]
    (ckpt / "evals.json").write_text(json.dumps(evals))
    rows = rows_of(model_table(str(ckpt)))
    assert rows["right, 8 tokens a step"][3] == "no" and not needs_lines(str(ckpt))


def test_a_roster_models_table_has_its_line_probes_a_missing_one_a_dash(tmp_path):
    from tspd.book.model_card import model_table
    ckpt = _checkpoint(tmp_path, "tiny-roster", "*.safetensors")
    log = (ckpt / "eval_log.csv").read_text().splitlines()
    header, last = log[0].split(","), log[-1].split(",")
    last[header.index("probe_pair")] = ""
    (ckpt / "eval_log.csv").write_text("\n".join(log[:-1] + [",".join(last)]) + "\n")
    table = model_table(str(ckpt))
    rows = rows_of(table)
    assert table.startswith("| `m` |") and rows["size"][0] == "-"                       # no weights: a dash
    pair = next(v for k, v in rows.items() if k.startswith("two masked chores"))
    assert pair[0] == "-" and pair[4] == f"`{ckpt / 'eval_log.csv'}`"
    assert rows["right, 2 tokens a step"][4].endswith("regime.json`")


def test_the_regime_targets_carry_their_interval_and_n_and_a_model_without_a_record_gets_dashes(tmp_path):
    from tspd.book.regime import targets_table
    ckpt = _checkpoint(tmp_path, "tiny-arith")
    record = json.loads((ckpt / "regime.json").read_text())
    rows = rows_of(targets_table(str(ckpt)))
    assert rows["Fast-dLLM 0.9 TPF"][0] == f"{record['rows']['fast']['tpf']:.2f}"
    assert rows["vanilla accuracy, %"][2:5] == [str(record["config"]["n"]), "75 to 95", "no"]      # above the band
    long = next(v for k, v in rows.items() if k.startswith("vanilla at"))
    assert long[2] == str(record["rows"][f"vanilla_{2 * record['gen_length']}"]["n"])          # its own n
    assert rows["the dual cache costs vanilla, points"][4] == "no"
    record["rows"]["vanilla_dual"] = record["rows"]["vanilla"]          # a dual cache that costs vanilla nothing
    (ckpt / "regime.json").write_text(json.dumps(record))
    assert rows_of(targets_table(str(ckpt)))["the dual cache costs vanilla, points"][:2] == ["0.0", ""]
    (ckpt / "regime.json").unlink()
    assert rows_of(targets_table(str(ckpt))) == {"no regime record yet": ["-"] * 6}


def test_the_loop_table_bolds_each_missed_target_and_leaves_out_settings_without_one(tmp_path):
    from tspd.bench.loop import overhead_table
    row = dict(policy="tspd", ce=True, forwards_per_call=3.0, target=0.15)
    rows = [dict(row, cache="none", rest_of_forward=0.1, meets_target=True),
            dict(row, cache="dual", rest_of_forward=0.2, meets_target=False),
            dict(row, cache="prefix", rest_of_forward=0.1504, meets_target=False),
            dict(row, policy="credit", ce=False, cache="none", rest_of_forward=0.5, target=None, meets_target=None)]
    (tmp_path / "loop-x.json").write_text(json.dumps(
        dict(model="m", gen_length=64, block_length=32, device="a CPU", revision="abc", rows=rows)))
    table = overhead_table(tmp_path)
    got = rows_of(table)
    assert got["TSPD + CE"] == ["15", "10.0 / **15.04** / **20.0**"] and "Credit" not in table
    assert "a CPU" in table.splitlines()[0] and got["model, window, revision"][1] == "`m`, 64 / 32, batch 1, `abc`"


def test_the_fresh_clone_table_gives_the_venv_and_the_tests_apart():
    rec = {"command": "bash scripts/time_fresh_clone.sh", "revision": "abc1234", "date": "2026-11-27", "device": "AMD EPYC",
           "cores": 2, "load_average_before": 0.1, "venv_seconds": 150, "tests_seconds": 450, "tests_exit": 0,
           "tests_summary": "1090 passed, 2 skipped in 440.0s (0:07:20)", "book_seconds": 240, "shared": False}
    rows = rows_of(fresh_clone.times_table(fresh_clone.FreshClone(**rec)))
    assert rows["create `.venv`"][0] == "2.5" and rows["`bash scripts/test.sh`"][0] == "7.5"
    assert rows["`bash scripts/test.sh`"][1].startswith("1090 passed, 2 skipped; 10.0 with `.venv`; no `../shared`")
    older = fresh_clone.FreshClone(**{**rec, "venv_seconds": None, "shared": None})      # a record before both
    rows = rows_of(fresh_clone.times_table(older))
    assert rows["create `.venv`"][0] == "-" and rows["`bash scripts/test.sh`"][1].endswith("creating `.venv` included")


def test_the_lmeval_table_has_a_row_per_command_as_its_record_says():
    record = lmeval_example.load()
    record.runs["lm_eval"] = dataclasses.replace(record.runs["lm_eval"], accuracy=0.16, tpf=None)
    table = lmeval_example.example_table(record)
    assert rows_of(table)["`lm_eval`"][:3] == ["0.16", f"{record.runs['lm_eval'].nfe:.2f}", "-"]
    assert f"`{record.model}`, {record.limit} problems" in table.splitlines()[0]


def test_tables_of_another_model_name_it(tmp_path):
    data = cache_agreement.load_dict()
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**data, "model": "other-model"}))
    assert cache_agreement.agreement_table(path).startswith(f"Measured on `other-model`, not on `{DEFAULT_MODEL}`.")
    if data["model"] == DEFAULT_MODEL:
        assert cache_agreement.agreement_table() == cache_agreement.markdown(data)
    table = controller_table.load()
    other = dataclasses.replace(table, model="other-model", rows=[r for r in table.rows if r["controller"] != "credit"])
    rows = rows_of(controller_table.overview_table(other))
    assert controller_table.overview_table(other).startswith("| `other-model`")
    assert rows["Credit Decoding"] == ["-"] * 4 and rows["vanilla"][1] == f"{table.gen_length:.1f}"   # a missing row: dashes; vanilla: a forward a token


def test_the_gpu_table_has_a_column_per_card_and_a_dash_for_a_missing_figure(tmp_path):
    from tspd.bench import step as bench_step
    data = json.loads((bench_step.DIRECTORY / "NVIDIA-H200.json").read_text())
    row = next(r for r in data["rows"] if r["batch"] == 1)
    del row["dual_step_fast"]
    (tmp_path / "NVIDIA-H200.json").write_text(json.dumps(data))
    table = bench_step.speed_table(directory=tmp_path)
    assert table.splitlines()[0] == f"|  | {data['device']} |"                           # the H100's file is not there
    assert rows_of(table)["dual-cache step, fast path, ms"] == ["- (goal 8)"]


def test_the_claims_summary_counts_each_verdict_and_names_the_unmeasured():
    from tspd.book import claims
    from tspd.book.claims.summary import decisive_table, summary_table
    stored = claims.load_all()
    tally = claims.tally(claims.page_rows(stored))
    rows = rows_of(summary_table(stored))
    assert [rows[v][0] for v in (claims.HOLDS, claims.FAILS, claims.OPEN)] == \
        [str(tally[v]) for v in (claims.HOLDS, claims.FAILS, claims.OPEN)]
    assert rows_of(summary_table({}))["not measured"][0] == str(len(claims.NOTEBOOKS))      # nothing stored yet
    decided = decisive_table(stored).splitlines()[2:]
    assert len(decided) == sum(tally.values()) and all(re.search(r"\[.*\], claimed", line) for line in decided)


def test_the_verdicts_context_says_what_the_model_record_allows(tmp_path):
    from tspd.book.claims.summary import NEEDS, NO_NEED, verdict_context
    ckpt = _checkpoint(tmp_path, "tiny-arith")
    text = verdict_context(str(ckpt), {})
    assert NEEDS in text and "| `m` |" in text and "Table 4" not in text
    evals = json.loads((ckpt / "evals.json").read_text())
    for r in evals:
        r["correct"] = r["n"]
    (ckpt / "evals.json").write_text(json.dumps(evals))
    probes = json.loads((ckpt / "probes.json").read_text())
    probes["one_pass_final"] = 1.0
    (ckpt / "probes.json").write_text(json.dumps(probes))
    assert NO_NEED in verdict_context(str(ckpt), {})


def test_the_readmes_figure_is_drawn_from_the_regime_records(tmp_path):
    """The README's picture exists where it links it, and fill-records' drawing of it runs from the stored records
    alone (nothing measured: no model loads)."""
    from tspd.book.regime import README_FIGURE, readme_figure
    assert f"]({README_FIGURE.relative_to(REPO_ROOT)})" in (REPO_ROOT / "README.md").read_text()
    assert README_FIGURE.is_file()
    drawn = readme_figure(tmp_path / "p.png")
    assert drawn.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_model_card_shows_the_probes_of_the_models_own_task():
    """A serial model (the shell game) logs its chain probes and leaves the roster's empty, a roster model the other
    way round: each card shows its own task's probes, none as an empty row."""
    from tspd.book.model_card import probe_rows
    shell = [r[0] for r in probe_rows("tiny-leaning-shell")]
    roster = [r[0] for r in probe_rows("tiny-roster")]
    assert any("past what is written" in w for w in shell) and not any("chore" in w for w in shell)
    assert any("chore" in w for w in roster) and not any("past what is written" in w for w in roster)
