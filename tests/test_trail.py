"""The trail task: answers follow the links, one look-up a letter; the grade reads every letter."""
import random

from tspd.tasks import trail
from tspd.tasks.generated import generated_task
from tspd.tasks.registry import get_task


def _problem():
    return trail.make_problem(random.Random(3))


def test_each_letter_is_the_link_of_the_one_before_it():
    p = _problem()
    for (start, steps), line in zip(p["trails"], p["lines"]):
        got = line.split(">")
        assert got[0] == start and len(got) == steps + 1
        assert all(p["links"][a] == b for a, b in zip(got, got[1:]))
        assert len(set(got)) == len(got)   # shorter than the cycle: no letter twice, nothing to copy by position


def test_the_links_form_one_cycle_and_the_question_shows_them_shuffled():
    p = _problem()
    a, seen = next(iter(p["links"])), set()
    while a not in seen:
        seen.add(a)
        a = p["links"][a]
    assert seen == set(p["links"])
    shown = p["question"].split(": ", 1)[1].split(".")[0].split(",")
    assert sorted(shown) == sorted(f"{k}>{v}" for k, v in p["links"].items())


def test_the_reference_is_right_and_one_wrong_letter_is_not():
    p = _problem()
    assert trail.right(p, p["answer"])
    line = p["lines"][-1]
    last = line[-1]
    other = next(c for c in p["links"] if c != last)
    bad = p["answer"].replace(line, line[:-1] + other)
    assert not trail.right(p, bad)
    assert "letter" in trail.fault(p, bad)


def test_a_missing_or_extra_line_is_a_fault():
    p = _problem()
    lines = p["answer"].split("\n")
    assert "missing" in trail.fault(p, "\n".join(lines[:1] + lines[-1:]))
    assert "after" in trail.fault(p, "\n".join(lines[:-1] + ["A>B"] + lines[-1:]))


def test_registered_as_a_generated_task_and_a_benchmark():
    assert generated_task("tspd.tasks.trail") is trail
    task = get_task("trail")
    sample = task.samples(2)[0]
    assert task.grade(sample, task.reference_completion(sample))["correct"]
    assert not task.grade(sample, "A>B\n#### 1")["correct"]


def test_every_token_of_an_answer_is_a_letter_or_a_mark_of_the_layout():
    from tspd.models.loading import load_model
    tok = load_model("tiny-roster").tokenizer
    p = _problem()
    pieces = [tok.decode([i]) for i in tok(p["lines"][0], add_special_tokens=False)["input_ids"]]
    assert pieces == list(p["lines"][0])   # one token a letter and a '>' (no letter merged with another)


def test_the_hop_probes_read_the_letters_ahead_of_the_last_one_written():
    """A model that knows the reference window gets every hop right and every line in one pass; the untrained
    tiny-roster (it has never seen a link) gets no hop right."""
    import torch
    from tspd.models.loading import load_model
    from tspd.training import serial_probes as trail_probes
    from tspd.training.probes import _encode, _window

    lm = load_model("tiny-roster")
    tok, problems = lm.tokenizer, trail.load_split("test", 3)
    windows = [_window(tok, _encode(tok, p["answer"])[0], 64) for p in problems]

    class Oracle(torch.nn.Module):   # logits peaked on the reference token at every answer position
        def forward(self, ids, attention_mask=None, position_ids=None, logits_from=0):
            out = torch.zeros(ids.shape[0], ids.shape[1] - logits_from, len(tok))
            for r in range(ids.shape[0]):
                width = int(attention_mask[r].sum()) - 64   # the prompt's tokens
                prompt = [int(t) for t in ids[r, logits_from - width:logits_from]]
                w = next(w for p, w in zip(problems, windows) if _encode(tok, trail.prompt(p))[0] == prompt)
                out[r, torch.arange(64), torch.tensor(w)] = 1.0
            return out

    got = trail_probes.run_probes(Oracle(), tok, problems, 64, mask_id=lm.special.mask)
    assert got["probe_hop1"] == got["probe_hop2"] == 1.0 and got["one_pass_lines"] == 1.0
    assert got["probe_hop4"] in (None, 1.0)
    assert trail_probes.run_probes(lm, tok, problems, 64, mask_id=lm.special.mask)["probe_hop1"] < 0.5
