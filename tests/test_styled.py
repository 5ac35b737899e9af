"""The styled roster task (tspd.tasks.styled): a per-answer style in every marker, graded on the chores alone."""
import random

from tspd.eval.tasks import get_task
from tspd.models.loading import load_tokenizer
from tspd.tasks import roster, styled


def test_every_reference_answer_is_right_and_both_styles_occur_at_their_odds():
    problems = styled.load_split("test")
    assert all(styled.right(p, p["answer"]) for p in problems)
    share_a = sum(p["style"] == "A" for p in problems) / len(problems)
    assert abs(share_a - styled.P_A) < 0.06


def test_markers_follow_the_style_at_their_rate():
    rng, follows, total = random.Random(0), 0, 0
    for _ in range(400):
        text = styled.line(rng, 1, 1, ["cook", "wash", "sweep", "shop"])   # style B: each ; ;
        follows += (" each " in text) + text.count(";")
        total += 4
    assert abs(follows / total - styled.P_FOLLOW) < 0.04


def test_any_mix_of_forms_is_right_and_a_wrong_plan_is_not():
    p = styled.load_split("test", 1)[0]
    lines = [styled.line(random.Random(d), d % 2, d + 1, p["chores"]) for d in range(p["days"])]
    assert styled.right(p, "\n".join(lines) + f"\n#### {p['days']}")
    twice = [p["chores"][0]] * len(p["chores"])
    bad = [roster.line(1, twice)] + lines[1:]
    assert styled.fault(p, "\n".join(bad) + f"\n#### {p['days']}") == f"day 1: {p['chores'][0]!r} given twice"
    assert styled.parse_line("On day 2 they each cook; wash, sweep and shop.") == (2, ["cook", "wash", "sweep", "shop"])
    assert styled.parse_line("On day 2 they must cook, wash and sweep.") is None


def test_both_styles_write_a_line_in_as_many_tokens_as_roster():
    """Equal token lengths keep the day count where a roster model learns it (by position)."""
    tok = load_tokenizer("tiny-roster")
    for n in (3, 4, 5):
        chores = roster.CHORES[:n]
        want = len(tok(roster.line(3, chores))["input_ids"])
        for style in (0, 1):
            assert len(tok(styled.line(random.Random(n), style, 3, chores))["input_ids"]) == want


def test_the_benchmark_grades_by_the_styled_rules():
    task = get_task("styled")
    s = task.samples(2)
    assert task.grade(s[0], s[0]["answer"])["correct"]
    assert task.grade(s[0], s[0]["answer"].replace(" each ", " must ").replace(" will ", " must "))["reason"]
