"""The dynamics measures (tspd.measures.dynamics) on hand-built traces: a step, a ramp, an oscillation."""
import numpy as np
import pytest
import torch

from tspd.measures.dynamics import DynamicsConfig, block_measures, flip_gap_of, prompt_measures, summary

CFG = DynamicsConfig()


def one_token(conf, right, masked=None):
    """A one-position block from per-step lists (masked at every step unless given)."""
    conf = torch.tensor(conf)[:, None]
    right = torch.tensor(right)[:, None]
    masked = torch.ones_like(right) if masked is None else torch.tensor(masked)[:, None]
    return block_measures(conf, right, masked, torch.tensor([True]), CFG)


def test_a_step_is_certain_at_once():
    m = one_token([0.95, 0.97], [True, True])
    assert m.certain_first.tolist() == [True] and m.unsure.tolist() == [False] and m.crossed.tolist() == [False]


def test_a_jump_crosses_after_a_rise_of_one():
    m = one_token([0.5, 0.5, 0.5, 0.99], [False, True, True, True])
    assert not m.certain_first[0] and m.crossed[0] and m.rise.tolist() == [1]
    assert m.unsure.tolist() == [True]     # two steps right (the argmax final from step 1) at conf 0.5


def test_a_ramp_rises_over_its_steps():
    m = one_token([0.3, 0.5, 0.7, 0.85, 0.95], [True] * 5)
    assert m.crossed[0] and m.rise.tolist() == [4]
    assert m.unsure[0]                     # 0.5, 0.7, 0.85: three steps right but unsure


def test_a_rise_counts_only_growing_steps_in_a_row():
    m = one_token([0.3, 0.6, 0.6, 0.7, 0.95], [True] * 5)   # flat at step 2: the run is steps 3-4
    assert m.rise.tolist() == [2]
    m = one_token([0.3, 0.6, 0.605, 0.7, 0.95], [True] * 5)  # a gain of 0.005 is no growth (min_gain 0.01)
    assert m.rise.tolist() == [2]


def test_a_crossing_on_a_wrong_token_is_not_counted():
    assert not one_token([0.3, 0.6, 0.95], [True, True, False]).crossed[0]


def test_a_rise_is_a_climb_of_the_final_token():
    m = one_token([0.2, 0.25, 0.33, 0.5, 1.0], [False, False, True, False, True])   # a free choice's share grows
    assert m.crossed[0] and m.rise.tolist() == [1]


def test_an_oscillation_is_unsure_only_once_it_settles_and_moves():
    conf = [0.6, 0.8, 0.6, 0.8, 0.6, 0.8]
    m = one_token(conf, [False, True, False, True, True, True])
    assert m.unsure.tolist() == [True]      # steps 3-5, argmax final from step 3 on, conf in [0.5, 0.9)
    assert not one_token(conf, [False, True, False, True, False, True]).unsure[0]   # settles only at the last step
    # history: steps 3.. have 4 steps of it; the spread of 0.6/0.8 alternating is ~0.115 > 0.05 (moved)
    assert torch.isnan(m.spread[:3]).all() and (m.spread[3:] > 0.1).all()
    assert m.flip.tolist() == [True, False, True, False, False, False]


def test_tokens_are_the_answer_positions_masked_at_the_block_start():
    conf = torch.tensor([[0.95, 0.4, 0.95], [0.97, 0.95, 0.97]])
    right = torch.ones(2, 3, dtype=torch.bool)
    masked = torch.tensor([[True, True, True], [False, True, True]])   # position 0 committed at step 0
    m = block_measures(conf, right, masked, torch.tensor([True, True, False]), CFG)   # position 2 ends as EOS
    assert m.certain_first.tolist() == [True, False] and m.crossed.tolist() == [False, True]
    assert len(m.conf) == 3                 # masked answer token-steps: (0, 0), (0, 1), (1, 1)


def test_fig1_gap_is_moved_minus_steady_within_bins():
    counts = np.zeros((10, 2, 2))
    counts[6] = [[100, 10], [50, 20]]       # bin [0.6, 0.7): steady 10 %, moved 40 %
    assert flip_gap_of([counts]) == pytest.approx(30.0)
    counts[7] = [[100, 0], [0, 0]]          # a bin with steady states only does not count
    assert flip_gap_of([counts]) == pytest.approx(30.0)
    assert np.isnan(flip_gap_of([np.zeros((10, 2, 2))]))


def test_summary_shares_add_up_over_prompts():
    blocks = [one_token([0.5, 0.5, 0.99], [True] * 3), one_token([0.95], [True])]
    row = {**prompt_measures(blocks, CFG), "vanilla_nfe": 4, "egp_nfe": 2, "fast_nfe": 3, "egp_same": True,
           "tspd_ce_nfe": 6, "fast_right": True, "tspd_ce_right": False}
    s = summary([row, row])
    assert s["answer_tokens"] == 4 and s["certain_first"]["value"] == 50.0 and s["unsure"]["value"] == 50.0
    assert s["crossed"]["value"] == 50.0 and s["rise_crossed"]["value"] == 0.0 and s["rises"][1] == 2
    assert s["oracle"]["egp_over_fast"]["value"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["bands"][1]["token_steps"] == 4 and s["bands"][3]["token_steps"] == 4
    assert s["tspd_ce"]["over_fast"]["value"] == 2.0 and s["fast_correct"] == 2 and s["tspd_ce_correct"] == 0


def test_the_record_is_written_and_read_back_whole(tmp_path):
    from tspd.measures import dynamics
    blocks = [one_token([0.5, 0.5, 0.99], [True] * 3)]
    row = {"id": "p0", **prompt_measures(blocks, CFG), "vanilla_nfe": 4, "egp_nfe": 2, "fast_nfe": 3, "egp_same": True}
    record = {"command": "python -m tspd dynamics", "weights": "abc", "rows": [row, row], "summary": summary([row])}
    path = dynamics.save(tmp_path / "dynamics.json", record)
    assert dynamics.load(None, path) == record
    assert path.read_text().count("\n  {") == 2          # a row a line
    assert dynamics.load(None, tmp_path / "none.json") is None


# a prompt's token-step counts (per band, per Fig. 1 bin): where two of a block's positions tie at float precision
# (a roster line's free chores), which is written first follows the CPU's rounding and moves a few token-steps
# between bins (2 of ~1,100 on a 2026-12-01 AMD EPYC for tiny-roster); every per-token measure and forward count of
# the row is compared exactly
STEP_COUNTS = ("band_steps", "band_flips", "fig1")


def _recorded():
    from tspd.models.loading import ZOO
    return sorted(p.parent.name for p in ZOO.glob("*/dynamics.json"))


@pytest.mark.slow
@pytest.mark.parametrize("name", _recorded())
def test_a_shipped_dynamics_record_reproduces_its_first_batch(name):
    """The first problems of a zoo model's committed dynamics record, measured again with the current code: the same
    counts, prompt by prompt, its token-step counts within :data:`STEP_COUNTS`' margin (3 of its first batch of 10:
    a row did not depend on its batch-mates, as checked on tiny-arith and tiny-roster, and three cost a third)."""
    from tspd.measures.dynamics import OURS, measure_batch
    from tspd.models.loading import load_model, resolve_path, weights_hash
    from tspd.measures import dynamics
    from tspd.tasks.generated import generated_task
    record, path = dynamics.load(name), resolve_path(name)
    assert record["weights"] == weights_hash(path), "the zoo model changed: rerun python -m tspd dynamics"
    cfg, task = DynamicsConfig(**record["config"]), generated_task(record["task"])
    problems = task.load_split("test", 3)
    again = measure_batch(load_model(path), task, problems, record["gen_length"], record["block_length"], cfg,
                          record[OURS])
    for problem, got, stored in zip(problems, again, record["rows"][:3]):
        steps = {k: got.pop(k) for k in STEP_COUNTS}
        assert {"id": problem["id"], **got} == {k: v for k, v in stored.items() if k not in STEP_COUNTS}
        for k, counts in steps.items():
            ours, theirs = np.array(counts), np.array(stored[k])
            assert (np.abs(ours - theirs) <= np.maximum(2, theirs // 100)).all(), (problem["id"], k)


def test_a_complete_record_is_read_back_untouched_and_a_partial_one_resumed(tmp_path, monkeypatch):
    """Reading a finished record back (the regime page does) rewrites nothing: not its command, revision or device."""
    import tspd.measures.dynamics as dyn
    from tspd.models.loading import weights_hash
    calls = []

    def fake_batch(model, task, problems, *a, **k):
        calls.append(len(problems))
        return [{"tokens": 1, "certain_first": 1, "unsure": 0, "crossed": 0, "rise_crossed": 0, "rises": [0] * 9,
                 "band_steps": [0, 0, 0, 1], "band_flips": [[[0, 0], [0, 0]]] * 3 + [[[1, 0], [0, 0]]],
                 "fig1": [[[0, 0], [0, 0]]] * 10, "vanilla_nfe": 4, "vanilla_right": True, "egp_nfe": 2,
                 "egp_same": True, "fast_nfe": 3, "fast_right": True} for _ in problems]
    monkeypatch.setattr(dyn, "measure_batch", fake_batch)
    out = tmp_path / "d.json"
    cfg = DynamicsConfig(n=4, batch=2)
    first = dyn.measure_checkpoint("tiny-arith", DynamicsConfig(n=2, batch=2), command="first", out=out)
    assert calls == [2] and first["weights"] == weights_hash("tiny-arith")
    out.write_text(out.read_text().replace('"n": 2', '"n": 4'))          # as if stopped after its first batch
    resumed = dyn.measure_checkpoint("tiny-arith", cfg, command="second", out=out)
    assert calls == [2, 2] and len(resumed["rows"]) == 4 and resumed["command"] == "second"   # it asked for all 4
    before = out.read_bytes()
    again = dyn.measure_checkpoint("tiny-arith", cfg, command="third", out=out)
    assert calls == [2, 2] and again == resumed and out.read_bytes() == before
