"""The Bayes oracle's decoding (tspd.measures.oracle) on hand-built answers, and its committed record rerun."""
import json
from pathlib import Path

import numpy as np
import pytest

from tspd.measures.oracle import (SHIFTED, Aligned, Group, Layout, decode, designs, measure, permutations,
                                  shifted_layout, styled_layout, styles, sums)

RECORD = Path(__file__).resolve().parents[1] / "results" / "training" / "oracle" / "oracle.json"


def test_groups_condition_on_what_is_written():
    assert permutations(2).marginals({}) == [{0: 0.5, 1: 0.5}, {0: 0.5, 1: 0.5}]
    assert permutations(2).marginals({0: 1})[1] == {0: 1.0}
    assert sums(2, (2, 3), 5).marginals({0: 2})[1] == {3: 1.0}
    m = styles(2, 0.5, 0.6).marginals({})[0]
    assert m[0] == pytest.approx(0.5 + 0.5 * 0.6)
    m = styles(2, 0.5, 0.6).marginals({0: 0})[1]              # a first form written: the line more likely plain
    assert m[0] == pytest.approx((0.5 + 0.5 * 0.6 * 0.6) / (0.5 + 0.5 * 0.6))


def test_a_free_pair_is_a_jump_and_a_template_is_certain_at_once():
    # two template tokens, then two slots holding 0 and 1 in either order, in a block of 4
    lay = Layout([None, None, ("c", 0), ("c", 1)], {"c": permutations(2)}, 4)
    (b,) = decode(lay, 4, 4)
    assert b.certain_first.tolist() == [True, True, False, False]
    # the template is written first (steps 0, 1) while the pair waits at 0.5; then the first slot is written with
    # its argmax (0, the smallest value on a tie) and its sibling jumps to 1
    assert b.conf.tolist() == [1, 1, 0.5, 0.5, 1, 0.5, 0.5, 0.5, 0.5, 1]
    assert b.flip.tolist() == [False, False, False, True, False, False, True, False, True, False]
    assert b.unsure.tolist() == [False, False, True, False]   # the first: three steps at 0.5 on its final token


def test_sampling_draws_from_the_marginal_argmax_does_not():
    lay = Layout([("c", 0), ("c", 1)], {"c": Group(((0.3, (0, 1)), (0.7, (1, 0))))}, 2)
    firsts = {decode(lay, 2, 2, sample=np.random.default_rng(s))[0].flip[0].item() for s in range(20)}
    assert firsts == {False, True}                              # the argmax (1) is sometimes not what is written
    assert decode(lay, 2, 2)[0].flip.tolist() == [False, False, False]


def test_an_alignment_mixes_its_places_and_a_written_token_rules_one_out():
    # a line of two places: either token 7 then a free value (codes 10 / 11), or the free value then 7
    free = Group(((0.5, (0,)), (0.5, (1,))))
    line = Aligned(((0.75, (7, ("v", 0, (10, 11)))), (0.25, (("v", 0, (10, 11)), 7))), {"v": free})
    first, second = line.marginals({})
    assert first == pytest.approx({7: 0.75, 10: 0.125, 11: 0.125})
    assert second == pytest.approx({10: 0.375, 11: 0.375, 7: 0.25})
    assert line.marginals({1: 7})[0] == pytest.approx({10: 0.5, 11: 0.5})   # 7 second: only the other alignment
    assert line.marginals({0: 10})[1] == {7: 1.0}


def test_a_shifted_line_without_long_forms_is_the_styled_line():
    from tspd.tasks import styled
    problem = styled.load_split("test", 1)[0]
    plain = measure([styled_layout(problem, 7, 3, (0.3, 0.4))], 256, 32)["rows"]
    assert measure([shifted_layout(problem, 7, 3, longs=0)], 256, 32)["rows"] == plain
    shifted = shifted_layout(problem, 7, 3, longs=1)
    n = len(problem["chores"])
    assert len(shifted.groups[0].alignments) == n                    # one long joiner: n places for it
    assert shifted.answer == styled_layout(problem, 7, 3).answer + problem["days"]   # one token longer a line


def test_the_committed_record_reproduces():
    record = json.loads(RECORD.read_text())
    built = designs(3, record["header"], record["tail"])
    shifted = {name for name, _, _ in SHIFTED}   # five times the cost of an answer of the others: one answer each
    for name, stored in record["designs"].items():
        layouts, seed, _ = built[name]
        if seed is not None:       # a sampled design's draws run on through all n answers: its first rows need n
            continue
        k = 1 if name in shifted else 3
        got = measure(layouts[:k], 256, 32)["rows"]
        assert got == stored["first_rows"][:k], name


def test_the_regime_page_table_has_every_design_the_models_and_the_targets():
    from tspd.measures.oracle import oracle_table
    record = json.loads(RECORD.read_text())
    summary = record["designs"]["styled"]["summary"]
    rows = oracle_table({"a model": {"summary": summary}})
    assert [r["decoded"] for r in rows] == [f"oracle: {d}" for d in record["designs"]] + ["trained: a model", "target"]
    assert rows[-1]["moved, % of the middle"] == ">= 20" and rows[1] == {**rows[-2], "decoded": "oracle: styled",
                                                                         "n": "100 answers"}


def test_the_status_table_of_two_token_forms_follows_the_record(tmp_path):
    """A row per design with its interval, the base design first, and "meets both" only where both targets are."""
    from tspd.measures.oracle import shifted_table

    def cell(v):
        return {"value": v, "lo": v - 1, "hi": v + 1}

    def design(moved, rises):
        return {"summary": {"moved_middle": cell(moved), "rise_crossed": cell(rises)}}
    record = {"n": 7, "designs": {"styled, odds 0.3 / 0.4": design(9.0, 13.0), SHIFTED[0][0]: design(18.0, 3.0),
                                  SHIFTED[1][0]: design(21.0, 6.0)}}
    path = tmp_path / "oracle.json"
    path.write_text(json.dumps(record))
    lines = shifted_table(path).splitlines()
    assert "n = 7 answers each" in lines[0] and lines[2].startswith("| `leaning` (styled, odds 0.3 / 0.4) | 9.0 [8.0, 10.0]")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[3:]}
    assert rows[SHIFTED[0][0]].endswith("| 18.0 [17.0, 19.0] | 3.0 [2.0, 4.0] | no |")
    assert rows[SHIFTED[1][0]].endswith("| 21.0 [20.0, 22.0] | 6.0 [5.0, 7.0] | yes |")


def test_a_shell_layout_puts_each_runs_markers_in_one_style_group():
    from tspd.measures.oracle import shell_layout
    lay = shell_layout({"cups": [2, 5, 5, 1]}, tail=3)
    assert lay.answer == len(lay.slots) == 4 * 4 + 3    # per item: index, joiner, cup, separator (the last: newline)
    assert [len(g.rows[0][1]) for g in lay.groups.values()] == [6, 1]   # three items' markers, then the last joiner
    (b,) = decode(lay, 32, 32)
    assert b.certain_first[:4].tolist() == [True, False, True, False] and b.unsure.sum() >= 2
    plain = shell_layout({"cups": [2, 5, 5, 1]}, tail=3, odds=(1.0, 0.4))
    assert decode(plain, 32, 32)[0].certain_first[:lay.answer].all()
