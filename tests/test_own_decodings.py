"""Training a gate on its own decodings (tspd.training.own_decodings): what a rollout's states are labelled
against, the aggregate of rounds, and a rollout on a tiny random model."""
from __future__ import annotations

import torch

from tspd.decoding.config import DecodeConfig
from tspd.training.own_decodings import OwnConfig, aggregate, fired_together, label_reference, rollout, rounds_table
from tspd.training.traces import block_sequences, collect

from conftest import prompts, random_model, seeded_net

GEN, BLOCK = 16, 8


def _step(x0: list[int], masked: list[bool]) -> dict:
    return {"block": 0, "features": torch.zeros(1, len(x0), 6), "x0": torch.tensor([x0]), "masked": torch.tensor([masked])}


def test_a_wrong_rollout_is_labelled_against_a_right_answer():
    """A rollout that committed a coupled pair at the wrong values (5, 6 where the right answer has 3, 4) is read
    against vanilla's right answer: the state where the pair's argmax is (5, 6) labels both unsafe; the lone token
    whose argmax is right is safe."""
    own, vanilla = torch.tensor([[1, 5, 6, 2]]), torch.tensor([[1, 3, 4, 2]])
    final, has = label_reference(own, [False], vanilla, [True])
    assert has.tolist() == [True] and final.tolist() == vanilla.tolist()
    steps = [_step([1, 5, 6, 0], [True, True, True, True])]
    (_, _, _, y, m), = block_sequences(steps, final, 4)
    assert y[0].tolist() == [True, False, False, False]


def test_joint_labels_judge_a_pair_fired_together_together_and_a_lone_right_token_alone():
    """Step 0 commits position 0 alone (right); step 1 commits the coupled pair 1, 2 together, 1 right and 2 wrong
    against the reference; step 2 commits 3 (right). Joint labels make the pair's right one unsafe at the step it
    fired; the lone tokens and the pair's earlier states keep their own labels."""
    ref = torch.tensor([[1, 3, 4, 2]])
    steps = [_step([1, 3, 6, 2], [True, True, True, True]), _step([1, 3, 6, 2], [False, True, True, True]),
             _step([1, 3, 6, 2], [False, False, False, True])]
    (_, _, _, y, m), = block_sequences(steps, ref, 4)
    assert y[1].tolist() == [True, True, False, True]                 # per token: the pair's right one is safe
    joint = fired_together(y, m)
    assert joint[1].tolist() == [True, False, False, True]            # judged together: both unsafe where they fired
    assert joint[0].tolist() == y[0].tolist() and joint[2].tolist() == y[2].tolist()
    right_pair = fired_together(torch.ones_like(y), m)                # a pair fired together, both right: safe
    assert right_pair.all()


def test_a_right_rollout_keeps_its_own_answer_and_no_right_answer_gives_no_labels():
    own, vanilla = torch.tensor([[1, 5], [7, 7]]), torch.tensor([[1, 3], [8, 8]])
    final, has = label_reference(own, [True, False], vanilla, [True, False])
    assert final[0].tolist() == [1, 5] and has.tolist() == [True, False]


def test_merged_rounds_keep_every_sequence_and_one_prompt_one_group():
    model = random_model(seed=7, scale=0.8)
    window = DecodeConfig(gen_length=GEN, block_length=BLOCK, ce=True)
    a = collect(model, prompts(4, seed=3), window, batch_size=4, progress=False)
    both = aggregate(a, a)
    assert len(both["offsets"]) - 1 == 2 * (len(a["offsets"]) - 1)
    assert both["offsets"][-1] == 2 * a["offsets"][-1] == both["features"].shape[0]
    assert set(both["prompt_index"].tolist()) == set(a["prompt_index"].tolist())


class _Task:
    """A stand-in task over id prompts: every problem's answer is graded right or not as the problem says."""

    def __init__(self, right: list[bool]):
        self.grades = right

    def prompt(self, p):
        return p["ids"]

    def right(self, p, text):
        return p["right"]


def test_a_rollout_records_the_gates_own_states_labelled_where_an_answer_is_right():
    model = random_model(seed=7, scale=0.8)
    problems = [{"ids": ids, "right": i != 1} for i, ids in enumerate(prompts(3, seed=4))]
    decode = DecodeConfig.of(controller="tspd", ce=True, gen_length=GEN, block_length=BLOCK)
    out = rollout(model, _Task([]), problems, seeded_net("tspd"), OwnConfig(batch=3), decode, progress=False)
    assert out["meta"]["rows"] == 3 and out["meta"]["labelled"] == 2      # problem 1: neither answer right
    assert set(out["prompt_index"].tolist()) == {0, 2}
    assert out["features"].shape[0] == out["offsets"][-1] and out["labels"].shape == out["masked"].shape


def test_the_rounds_table_marks_the_round_kept():
    saved = {"own": {"config": {"rollout_n": 10}, "best_round": 1, "rounds": [
        {"round": 0, "sequences": 5, "n": 4, "right": 0, "forwards": 30.0},
        {"round": 1, "sequences": 9, "rollout_right": 0, "rollout_labelled": 10, "n": 4, "right": 3, "forwards": 41.5},
        {"round": 2, "sequences": 13, "rollout_right": 6, "rollout_labelled": 10, "n": 4, "right": 2, "forwards": 40.0}]}}
    lines = rounds_table(saved).splitlines()
    assert lines[3] == "| 1 | 9 | 0 / 10 | 3 / 4 | 41.5 | kept |" and lines[4].endswith("| 40.0 |  |")


class _SplitTask(_Task):
    """The stand-in task with a traces split: every problem right as it says."""

    def __init__(self, problems: list[dict]):
        self.problems = problems

    def load_split(self, split, n):
        return self.problems[:n]


def test_an_interrupted_run_resumes_after_its_last_finished_round(tmp_path):
    """Each finished round is saved; a rerun of the same run continues from it (no round is trained twice), and a
    rerun with other settings is refused rather than mixed into the saved rounds."""
    from tspd.training.own_decodings import train_on_own
    from tspd.training.train_controller import ControllerTrainConfig
    model = random_model(seed=7, scale=0.8)
    decode = DecodeConfig.of(controller="tspd", ce=True, gen_length=GEN, block_length=BLOCK)
    problems = [{"ids": ids, "right": True} for ids in prompts(6, seed=5)]
    traces = collect(model, [p["ids"] for p in problems[:4]], DecodeConfig(gen_length=GEN, block_length=BLOCK, ce=True),
                     batch_size=4, progress=False)
    train_cfg, state = ControllerTrainConfig(epochs=2, batch=0), tmp_path / "own-state.pt"
    one = OwnConfig(rounds=1, rollout_n=4, check_n=2, batch=4)
    _, first, _ = train_on_own(model, _SplitTask(problems), traces, train_cfg, one, decode, log=lambda m: None,
                               progress=False, state=state)
    said = []
    _, again, _ = train_on_own(model, _SplitTask(problems), traces, train_cfg, one, decode, log=said.append,
                               progress=False, state=state)
    assert len(said) == 1 and said[0].startswith("resumed") and again["own"]["rounds"] == first["own"]["rounds"]
    import pytest
    with pytest.raises(ValueError, match="another run"):
        train_on_own(model, _SplitTask(problems), traces, train_cfg, OwnConfig(rounds=1, rollout_n=4, check_n=2,
                     batch=4, gate=0.7), decode, progress=False, state=state)
