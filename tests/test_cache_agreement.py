"""tspd.measures.cache_agreement: where a cached run parts from its no-cache twin."""
from __future__ import annotations

import torch

from tspd.measures.cache_agreement import final_tokens, first_parting, summarise
from tspd.decoding.loop import Trace

L = 4


def trace(commits: list[dict[int, int]], conf=0.9, margin=0.5) -> Trace:
    """One row; ``commits[s]`` maps position -> token committed at step s (argmax there = that token)."""
    S = len(commits)
    x0 = torch.full((S, 1, L), 7, dtype=torch.long)
    committed = torch.zeros(S, 1, L, dtype=torch.bool)
    masked = torch.ones(S, 1, L, dtype=torch.bool)
    for s, step in enumerate(commits):
        for p, tok in step.items():
            x0[s, 0, p], committed[s, 0, p] = tok, True
            masked[s + 1:, 0, p] = False
    def full(v) -> torch.Tensor:
        return torch.full((S, 1, L), float(v))

    return Trace(conf=full(conf), entropy=full(0), margin=full(margin), x0=x0, committed=committed,
                 masked=masked, seen_conf=full(conf), block=torch.zeros(S, dtype=torch.long))


def test_same_tokens_in_another_order_is_no_parting():
    ref = trace([{0: 5}, {1: 6}, {2: 7, 3: 8}])
    alt = trace([{1: 6}, {0: 5}, {3: 8, 2: 7}])
    assert final_tokens(ref).tolist() == [5, 6, 7, 8]
    assert first_parting(ref, alt) is None


def test_parting_is_the_first_commit_of_a_token_not_shared():
    ref = trace([{0: 5}, {1: 6}, {2: 7}, {3: 8}])
    alt = trace([{0: 5}, {1: 6}, {2: 9}, {3: 8}], conf=0.6, margin=0.1)
    p = first_parting(ref, alt)
    assert (p.step, p.step_in_block, p.kind) == (2, 2, "flip")
    assert abs(p.shift - 0.3) < 1e-6 and abs(p.slack - 0.5) < 1e-6      # the slack is the no-cache run's


def test_a_run_that_waits_then_commits_another_token_parts_by_timing():
    ref = trace([{0: 5}, {1: 6}, {2: 7, 3: 8}])
    alt = trace([{0: 5}, {}, {1: 4, 2: 7, 3: 8}])     # same argmax (7) at step 1 where it did not commit
    alt.x0[1, 0, 1] = 6
    p = first_parting(ref, alt)
    assert (p.step, p.kind) == (1, "timing")


def test_summary_counts_near_ties():
    ref = trace([{0: 5}, {1: 6}, {2: 7}, {3: 8}])
    near = first_parting(ref, trace([{0: 5}, {1: 9}, {2: 7}, {3: 8}], conf=0.2))    # shift 0.7 >= slack 0.5
    far = first_parting(ref, trace([{0: 5}, {1: 9}, {2: 7}, {3: 8}], conf=0.8))     # shift 0.1 < slack 0.5
    s = summarise([near, far, None])
    assert (s["parted"], s["near_tie"], s["flip"], s["timing"]) == (2, 1, 2, 0)


def test_lost_and_gained_answers_and_the_kinds_of_fault_lost():
    from tspd.measures.cache_agreement import changed
    rows = [dict(correct_no_cache=True, correct=False, fault="day 7: 8 hours, not 9"),
            dict(correct_no_cache=True, correct=False, fault="day 4: 12 hours, not 13"),
            dict(correct_no_cache=True, correct=False, fault="1 line(s) after day 6"),
            dict(correct_no_cache=False, correct=True, fault=None),
            dict(correct_no_cache=True, correct=True, fault=None)]
    assert changed(rows) == dict(lost=3, gained=1, lost_faults={"day N: N hours, not N": 2, "N line(s) after day N": 1})


def test_the_table_names_what_was_lost_only_where_the_rows_know():
    from tspd.measures.cache_agreement import markdown
    row = dict(policy="vanilla", cache="prefix", n=100, same_answer=0.5, same_answer_95=(0.4, 0.6), same_text=0.5,
               parted=50, near_tie=0, median_step_in_block=3, median_shift=0.0, median_slack=0.01)
    assert "lost" not in markdown(dict(rows=[row]))
    table = markdown(dict(rows=[dict(row, lost=7, gained=0, lost_faults={"day N: N hours, not N": 6})]))
    assert "| 7 / 0 | day N: N hours, not N (6) |" in table


def test_the_recorded_command_names_its_out_relative_to_the_repository(tmp_path):
    """The record's command is one a reader runs from a clone: the default --out is written as the repository
    names it, an --out outside the repository as given."""
    import argparse

    from tspd.commands.cache_agreement import _command_line
    from tspd.measures.cache_agreement import PATH
    args = argparse.Namespace(model="m", n=5, threads=2, out=str(PATH))
    assert _command_line(args).endswith("--out results/cache_agreement.json")
    outside = tmp_path / "c.json"
    assert _command_line(argparse.Namespace(model="m", n=5, out=str(outside))).endswith(f"--out {outside}")
