"""The transcribed paper numbers (tspd/reported.json) against the paper's tex source.

The tex is read from ``<repo>/../shared/paper/tspd_ce_paper.tex`` (or ``$TSPD_PAPER_TEX``); the tests
that need it are skipped when it is absent. Every number of every table row is compared, so a
transcription error fails here.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tspd.book import reported

REPO = Path(__file__).resolve().parents[1]
TEX = Path(os.environ.get("TSPD_PAPER_TEX", REPO.parent / "shared" / "paper" / "tspd_ce_paper.tex"))
LABELS = ["tab:llada_benchmark", "tab:llada_dream_benchmark", "tab:llada_variable_len_benchmark",
          "tab:kv_cache_ablation", "tab:module_ablation", "tab:arch_ablation", "tab:feat_ablation",
          "tab:tspd_param_scale", "tab:train_policy_sensitivity", "tab:tspd_data_scale",
          "tab:data_dist_sensitivity", "tab:ce_hyper_sensitivity", "tab:ce_ablation"]


@pytest.fixture(scope="module")
def tex() -> str:
    if not TEX.is_file():
        pytest.skip(f"paper source not found at {TEX}")
    return TEX.read_text()


# ---- a small reader for the paper's tabulars ---------------------------------------------------
def _clean(cell: str) -> str:
    cell = re.sub(r"\\(textbf|footnotesize)\s*", "", cell)
    cell = cell.replace("$^\\dagger$", "†").replace("$\\times$", "").replace("$\\sim", "~").replace("\\&", "&")
    cell = cell.replace("\\quad", "").replace("$", "").replace("{", "").replace("}", "")
    return " ".join(cell.split())


def tex_rows(tex: str, label: str) -> list[list[str]]:
    """The body rows (cells cleaned) of every tabular of the table with ``label``, header rows dropped."""
    start = tex.index(f"\\label{{{label}}}")
    end = tex.index("\\end{table}", start)
    rows = []
    for body in re.findall(r"\\begin\{tabular\}\{.*?\}\n(.*?)\\end\{tabular\}", tex[start:end], re.S):
        body = re.sub(r"\\multirow\[c\]\{\d+\}\{\*\}\{\\makecell\[c\]\{(.*?)\}\}", lambda m: m.group(1).replace("\\\\", " "), body)
        body = re.sub(r"\\(cline\{[^}]*\}|hline|toprule|midrule|bottomrule)", "", body)
        lines = [r for r in (x.strip() for x in body.split("\\\\")) if r]
        cells = [[_clean(c) for c in re.split(r"(?<!\\)&", line)] for line in lines]
        rows.extend(c for c in cells if any(re.fullmatch(r"[\d.]+", x) for x in c[1:]))   # drop header rows
    return rows


def _num(x) -> str:
    return f"{x:.1f}" if isinstance(x, float) else str(x)


def json_rows(table_id: str) -> list[list[str]]:
    """The same table from the JSON, as the strings the tex prints (label + numbers)."""
    cols = reported.table_info(table_id)["columns"]
    out = []
    for r in reported.paper_table(table_id):
        label = r["method"] + ("†" if r.get("dagger") else "")
        out.append([label] + [_num(r[c] if c in r else r["setting"][c]) for c in cols if c != "method"])
    return out


def _strip_group(cells: list[str], n: int) -> list[str]:
    """Tables 1-3 open each group with the task/model cell; keep only the last ``n`` cells."""
    return [c.replace(" ", "") if i == 0 else c for i, c in enumerate(cells[-n:])]


# ---- the tests --------------------------------------------------------------------------------
def test_tables_are_complete_and_in_paper_order():
    info = [reported.table_info(t) for t in reported.table_ids()]
    assert [t["id"] for t in info] == [f"table{i}" for i in range(1, 14)]
    assert [t["tex_label"] for t in info] == LABELS
    assert [t["number"] for t in info] == list(range(1, 14))
    for t in info:
        rows = reported.paper_table(t["id"])
        assert rows, t["id"]
        for r in rows:
            assert {"table", "tex_label", "caption", "setting", "method", "tps", "speedup", "accuracy"} <= set(r)
            assert r["tex_label"] == t["tex_label"] and r["table"] == t["id"]


def test_labels_follow_the_tex_order(tex):
    positions = [tex.index(f"\\label{{{lab}}}") for lab in LABELS]
    assert positions == sorted(positions)
    assert len(re.findall(r"\\label\{tab:", tex)) == len(LABELS) + 2   # + the two sub-labels of Table 12


@pytest.mark.parametrize("table_id", [f"table{i}" for i in range(1, 14) if i != 9])
def test_every_number_matches_the_tex(tex, table_id):
    label = reported.table_info(table_id)["tex_label"]
    ours = json_rows(table_id)
    width = len(ours[0])
    theirs = [_strip_group(c, width) for c in tex_rows(tex, label)]
    ours = [[c.replace(" ", "") if i == 0 else c for i, c in enumerate(r)] for r in ours]
    assert ours == theirs


def test_table9_transposed(tex):
    rows = tex_rows(tex, "tab:train_policy_sensitivity")
    header = re.search(r"\\label\{tab:train_policy_sensitivity\}.*?\\toprule\n(.*?)\\\\", tex, re.S).group(1)
    names = [_clean(c) for c in header.split("&")][1:]
    tps = dict(zip(names, rows[0][1:]))
    acc = dict(zip(names, rows[1][1:]))
    assert rows[0][0].startswith("TPS") and rows[1][0].startswith("Acc")
    for r in reported.paper_table("table9"):
        assert (_num(r["tps"]), _num(r["accuracy"])) == (tps[r["method"]], acc[r["method"]])


def test_spot_values_by_regex(tex):
    """A few values read with plain regexes, independent of the table reader above."""
    gsm = {(r["method"], r.get("dagger", False)): r for r in reported.paper_table("table1", task="gsm8k")}
    assert re.search(r"Vanilla & 6\.9 & 1\.0\$\\times\$ & 79\.3", tex)
    assert (gsm["Vanilla", False]["tps"], gsm["Vanilla", False]["accuracy"]) == (6.9, 79.3)
    assert re.search(r"& Ours & \\textbf\{77\.3\} & \\textbf\{11\.2\$\\times\$\} & 78\.8", tex)
    assert (gsm["Ours", False]["tps"], gsm["Ours", False]["speedup"], gsm["Ours", False]["accuracy"]) == (77.3, 11.2, 78.8)
    assert gsm["Ours", True]["tps"] == 34.2 and gsm["Ours", True]["setting"]["cache"] == "none"
    t8 = re.findall(r"^(\dK)\s+&\s+(\d+)\s+&\s+(?:\\textbf\{)?([\d.]+)\}?\s+&\s+(?:\\textbf\{)?([\d.]+)\}?", tex, re.M)
    assert [(m, int(h), float(t), float(a)) for m, h, t, a in t8] == [
        (r["method"], r["setting"]["hidden_size"], r["tps"], r["accuracy"]) for r in reported.paper_table("table8")]
    assert re.search(r"0\.30\\%.*0\.13\\%", tex)
    assert [o["percent_of_forward"] for o in reported.overheads()] == [0.30, 0.13]


def test_speedups_agree_with_tps_up_to_rounding():
    """Speedup = TPS / Vanilla TPS of the same setting, within the rounding of both; one known exception."""
    known = {("table13", "Fast-dLLM")}   # 52.8 TPS at 7.8x; Table 1 prints 53.8 TPS at 7.8x
    rows = reported.numbers()["rows"]
    vanilla = {}
    for r in rows:
        s = r["setting"]
        if s.get("policy") == "vanilla":
            vanilla[(s["model"], s.get("task"), s["gen_length"])] = r["tps"]
    for r in rows:
        s = r["setting"]
        if r["speedup"] is None or s.get("policy") == "vanilla":
            continue
        base = vanilla[(s["model"], s.get("task"), s["gen_length"])]
        lo, hi = (r["tps"] - 0.05) / (base + 0.05) - 0.05, (r["tps"] + 0.05) / (base - 0.05) + 0.05
        assert (lo <= r["speedup"] <= hi) != ((r["table"], r["method"]) in known), (r["table"], r["method"])


def test_figures_have_no_data_in_tex(tex):
    figs = reported.numbers()["figures"]
    assert [f["number"] for f in figs] == list(range(1, 7))
    assert all(f["data_in_tex"] is False for f in figs)
    for f in figs:
        assert f"\\label{{{f['tex_label']}}}" in tex
    assert tex.count("\\includegraphics[width=") == 6 and "\\includegraphics[width=\\linewidth]{ }" in tex


def test_side_by_side_labels_and_matching():
    paper = reported.paper_table("table13")
    ours = [{"method": "TSPD", "tps": 1.5, "accuracy": 50.0}, {"method": "Extra", "tps": 2.0, "accuracy": 40.0}]
    t = reported.side_by_side(paper, ours, keys=["method"], metrics=("tps", "accuracy"),
                              ours="ours (tiny-arith, cpu, n=8)", ours_only=())
    assert t.columns == ["method", "paper: TPS", "ours: TPS", "paper: acc. (%)", "ours: acc. (%)"]
    assert len(t) == len(paper) + 1
    assert t[0] == {"method": "TSPD", "paper: TPS": 30.3, "ours: TPS": 1.5, "paper: acc. (%)": 79.5, "ours: acc. (%)": 50.0}
    assert t[1]["ours: TPS"] is None and t[-1]["paper: TPS"] is None
    md = t.to_markdown()
    assert "paper (LLaDA-8B-Instruct, A100)" in md and "ours (tiny-arith, cpu, n=8)" in md
    assert "| TSPD | 30.3 | 1.5 | 79.5 | 50.0 |" in md
    assert "<table>" in t._repr_html_() and "overflow-x: auto" in t._repr_html_()   # a wide table scrolls
    with pytest.raises(ValueError):
        reported.side_by_side(paper, ours + ours[:1], keys=["method"])


def test_filters_and_labels():
    assert len(reported.paper_table("table1")) == 28
    assert [r["method"] for r in reported.paper_table("table12", part="H")][1:] == ["10", "15", "20", "25", "30"]
    assert reported.paper_label(reported.paper_table("table2")) == "paper (Dream-7B, LLaDA-MoE, A100)"
    assert reported.ours_label("/models/LLaDA-8B-Instruct/", "cuda", 1319) == "ours (LLaDA-8B-Instruct, cuda, n=1319)"
    with pytest.raises(KeyError):
        reported.paper_table("table14")
    shown = reported.show_paper("table4")
    assert shown.columns == ["method", "cache", "tps", "speedup", "accuracy"] and "Table 4" in shown.caption


def test_our_rows_at_lengths_the_paper_lacks_sit_in_length_order():
    paper = [{"gen_length": n, "method": "V", "tps": t, "setting": {}} for n, t in ((512, 1.0), (1024, 0.5))]
    ours = [{"gen_length": n, "method": "V", "tps": 9.0} for n in (256, 512, 2048)]
    t = reported.side_by_side(paper, ours, keys=["gen_length", "method"], metrics=("tps",), ours_only=())
    assert [r["gen_length"] for r in t] == [256, 512, 1024, 2048]
    assert t[0]["paper: TPS"] is None and t[1]["paper: TPS"] == 1.0 and t[1]["ours: TPS"] == 9.0
