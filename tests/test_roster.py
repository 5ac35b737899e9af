"""The coupled-answers task ``roster``: its whole-answer grade, splits and probes' places."""
import itertools

import pytest
import torch

from tspd.tasks.registry import get_task
from tspd.tasks import roster
from tspd.tasks.generated import generated_task
from tspd.training import roster_probes


def _problem(n=4, days=2):
    for p in roster.load_split("test"):
        if len(p["people"]) == n and p["days"] == days:
            return p
    raise AssertionError(f"no test problem with {n} people over {days} days")


def _answer(p, plans):
    return "\n".join(roster.line(d + 1, c) for d, c in enumerate(plans)) + f"\n#### {p['days']}"


@pytest.mark.parametrize("n", [3, 4, 5])
def test_every_valid_arrangement_is_right(n):
    p = _problem(n, 3)
    perms = list(itertools.permutations(p["chores"]))
    for a, b in zip(perms, reversed(perms)):
        assert roster.right(p, _answer(p, [a, b, a])), (a, b)


def test_a_duplicated_chore_a_missing_one_and_broken_lines_are_wrong():
    p = _problem(4, 3)
    good = list(p["chores"])
    plan = _answer(p, [good, good[::-1], good])
    assert roster.right(p, plan)
    twice = [good[0], good[0]] + good[2:]
    assert "given twice" in roster.fault(p, _answer(p, [good, twice, good]))
    missing = "\n".join(plan.split("\n")[:2] + [f"#### {p['days']}"])
    assert roster.fault(p, missing) == "day 3 is missing"
    first = roster.line(1, good)
    assert "3 chores for 4 people" in roster.fault(p, plan.replace(first, roster.line(1, good[:3])))
    assert "says day 2" in roster.fault(p, plan.replace(first, roster.line(2, good)))
    assert "not one of the chores" in roster.fault(p, _answer(p, [good, ["bake"] + good[1:], good]))
    assert "final" in roster.fault(p, plan.replace(f"#### {p['days']}", "#### 9"))
    longer = _answer({**p, "days": 4}, [good] * 4).replace("#### 4", f"#### {p['days']}")
    assert "after day" in roster.fault(p, longer)
    assert "not a roster line" in roster.fault(p, "Day 1: cook\n#### 3")
    assert not roster.right(p, "") and not roster.right(p, None)


def test_the_task_grades_through_its_class_and_every_reference_is_right():
    task = get_task("roster")
    samples = task.samples(50)
    assert all(task.grade(s, s["answer"])["correct"] for s in samples)
    bad = task.grade(samples[0], samples[0]["answer"].replace("#### ", "#### 1"))
    assert not bad["correct"] and bad["reason"]
    assert generated_task("roster") is roster and generated_task("tspd.tasks.roster") is roster


def test_splits_are_fixed_and_disjoint_by_question():
    test, traces = roster.load_split("test"), roster.load_split("traces")
    assert len(test) == 500 and len(traces) == 2000
    assert not {p["question"] for p in test} & {p["question"] for p in traces}
    assert all(roster.split_of(p["question"]) == "test" for p in test)
    train = roster.iter_train(0)
    assert all(roster.split_of(next(train)["question"]) == "train" for _ in range(200))
    assert roster.fingerprint() == roster.fingerprint() and roster.load_split("test", 3) == test[:3]


def test_probe_cells_cover_each_line_its_day_and_its_chores():
    p = _problem(5, 3)
    lines = roster_probes.cells(p)
    assert [p["answer"][a:b] for (a, b), _ in lines] == ["1", "2", "3"]
    for _, chores in lines:
        assert sorted(p["answer"][a:b] for a, b in chores) == sorted(p["chores"])


class _Oracle(torch.nn.Module):
    """Logits one-hot on the reference answer window of the prompt it is given (zeros: ``known`` False)."""

    def __init__(self, windows: dict[tuple, list[int]], vocab: int, known: bool = True):
        super().__init__()
        self.windows, self.vocab, self.known = windows, vocab, known
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, ids, attention_mask=None, position_ids=None, logits_from=0):
        out = torch.zeros(ids.shape[0], ids.shape[1] - logits_from, self.vocab)
        for r in range(ids.shape[0]):
            prompt = tuple(ids[r, :logits_from][attention_mask[r, :logits_from] == 1].tolist())
            if self.known:
                out[r] = torch.nn.functional.one_hot(torch.tensor(self.windows[prompt]), self.vocab).float()
        return out


@pytest.fixture(scope="module")
def roster_tokenizer(tmp_path_factory):
    from tspd.models.subword_tokenizer import train_tokenizer
    from tspd.training.lm.data import task_texts
    return train_tokenizer(task_texts(500, task=roster), tmp_path_factory.mktemp("tok"))


def test_the_probes_score_a_model_that_knows_the_plan_right_and_one_that_knows_nothing_wrong(roster_tokenizer):
    tok, problems, gen = roster_tokenizer, roster.load_split("test", 6), 256
    windows = {}
    for p in problems:
        answer = tok(p["answer"], add_special_tokens=False)["input_ids"]
        windows[tuple(tok(p["question"], add_special_tokens=False)["input_ids"])] = \
            answer + [tok.eos_token_id] * (gen - len(answer))
    for known, want in ((True, 1.0), (False, 0.0)):
        got = roster_probes.run_probes(_Oracle(windows, len(tok), known), tok, problems, gen,
                                       mask_id=tok.mask_token_id, batch=4)
        assert list(got) == list(roster_probes.COLUMNS) and all(v == want for v in got.values()), (known, got)
