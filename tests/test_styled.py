"""The styled roster task (tspd.tasks.styled): a per-answer style in every marker and hours that add up, graded on
the chores and the hours."""
import random
import re

from tspd.tasks.registry import get_task
from tspd.models.loading import load_tokenizer
from tspd.tasks import roster, styled


def test_every_reference_answer_is_right_and_both_styles_occur_at_their_odds():
    problems = styled.load_split("test")
    assert all(styled.right(p, p["answer"]) for p in problems)
    styles = "".join(p["styles"] for p in problems)
    assert len(styles) == sum(p["days"] for p in problems)
    assert abs(styles.count("P") / len(styles) - styled.P_PLAIN) < 0.03


def test_a_plain_line_writes_first_forms_and_a_mixed_line_mixes_them_at_its_rate():
    rng, first, total = random.Random(0), 0, 0
    plain = styled.line(rng, False, 1, ["cook", "wash", "sweep", "shop"], [2, 2, 3, 2])
    assert plain == "On day 1 they will cook 2, wash 2, sweep 3 and shop 2."
    for _ in range(400):
        text = styled.line(rng, True, 1, ["cook", "wash", "sweep", "shop"], [2, 2, 3, 2])   # 8 markers
        rest = text.partition(" they ")[2]
        first += rest.startswith("will ") + rest.count(",") + rest.count(" and ") + len(re.findall(r"[a-z] \d", rest))
        total += 8
    assert abs(first / total - styled.P_MIXED_FIRST) < 0.04


def test_any_mix_of_forms_and_places_of_the_long_chores_is_right_and_a_wrong_plan_is_not():
    p = styled.load_split("test", 1)[0]
    n, long = len(p["chores"]), p["total"] - 2 * len(p["chores"])
    rng = random.Random(0)
    lines = [styled.line(rng, d % 2 == 1, d + 1, p["chores"], styled.day_hours(rng, n, long)) for d in range(p["days"])]
    assert styled.right(p, "\n".join(lines) + f"\n#### {p['days']}")
    twice = styled.line(rng, False, 1, [p["chores"][0]] * n, styled.day_hours(rng, n, long))
    assert styled.fault(p, "\n".join([twice] + lines[1:]) + f"\n#### {p['days']}") == \
        f"day 1: {p['chores'][0]!r} given twice"
    short = styled.line(rng, False, 1, p["chores"], styled.day_hours(rng, n, long - 1))
    assert styled.fault(p, "\n".join([short] + lines[1:]) + f"\n#### {p['days']}") == \
        f"day 1: {p['total'] - 1} hours, not {p['total']}"
    assert styled.parse_line("On day 2 they each cook:2; wash 3, sweep:2 and shop 2.") == \
        (2, ["cook", "wash", "sweep", "shop"], [2, 3, 2, 2])
    assert styled.parse_line("On day 2 they must cook 2, wash 3 and sweep 2.") is None
    assert styled.parse_line("On day 2 they will cook, wash and sweep.") is None


def test_every_line_of_a_size_has_one_token_length_whatever_its_forms_and_hours():
    """Equal token lengths keep the day count where a roster model learns it (by position): roster's line and two
    tokens (a space, a digit) per chore's hours."""
    tok = load_tokenizer("tiny-roster")
    rng = random.Random(0)
    for n in (3, 4, 5):
        chores = roster.CHORES[:n]
        want = len(tok(roster.line(3, chores))["input_ids"]) + 2 * n
        got = {len(tok(styled.line(rng, rng.random() < 0.5, 3, chores, styled.day_hours(rng, n, rng.randint(1, n - 1))))
                   ["input_ids"]) for _ in range(50)}
        assert got == {want}


def test_the_benchmark_grades_by_the_styled_rules():
    task = get_task("styled")
    s = task.samples(2)
    assert task.grade(s[0], s[0]["answer"])["correct"]
    assert task.grade(s[0], s[0]["answer"].replace(" each ", " must ").replace(" will ", " must "))["reason"]


def test_leaning_is_styled_with_other_odds():
    from tspd.tasks import leaning
    problems = leaning.load_split("test")
    assert all(leaning.right(p, p["answer"]) for p in problems)
    styles = "".join(p["styles"] for p in problems)
    assert abs(styles.count("P") / len(styles) - leaning.P_PLAIN) < 0.03
    mixed = [line for p in problems for line, s in zip(p["answer"].splitlines(), p["styles"]) if s == "M"]
    firsts = sum(line.count(" will ") + line.count(", ") + line.count(" and ") for line in mixed)
    seconds = sum(line.count(" each ") + line.count("; ") for line in mixed)
    assert 0.3 < firsts / (firsts + seconds) < 0.5     # joiners and verbs of mixed lines lean to the second forms
    assert leaning.fingerprint() != styled.fingerprint()
