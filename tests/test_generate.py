"""The generation loop: LLaDA's official semantics, batching, validation and traces."""
from __future__ import annotations

import pytest
import torch

from tspd.decoding.controllers import Controller, Decision, StepView
from tspd.decoding.loop import generate
from tspd.decoding.schedule import num_transfer_tokens

from conftest import MASK, prompts, random_model, spied


def official_vanilla(model, prompt: list[int], gen_length: int, block_length: int, steps: int) -> torch.Tensor:
    """LLaDA's generate() for one prompt, written out plainly: full-canvas forwards, top-k commits."""
    x = torch.tensor([prompt + [MASK] * gen_length])
    P, per_block = len(prompt), steps // (gen_length // block_length)
    for b in range(gen_length // block_length):
        s, e = P + b * block_length, P + (b + 1) * block_length
        n = int((x[0, s:e] == MASK).sum())
        counts = [n // per_block + (1 if i < n % per_block else 0) for i in range(per_block)]
        for k in counts:
            logits = model(x)[0].float()
            logits[:, MASK] = -float("inf")          # tspd never proposes [MASK] (see _candidates_only)
            probs = torch.softmax(logits, -1)
            x0 = probs.argmax(-1)
            conf = probs.gather(-1, x0[:, None])[:, 0]
            conf[e:] = -float("inf")
            conf[:s] = -float("inf")
            conf[x[0] != MASK] = -float("inf")
            for j in conf.topk(k).indices.tolist() if k else []:
                x[0, j] = x0[j]
    return x[0, P:]


def test_schedule_gives_remainder_to_first_steps():
    got = num_transfer_tokens(torch.tensor([10, 32, 3]), 4)
    assert got.tolist() == [[3, 3, 2, 2], [8, 8, 8, 8], [1, 1, 1, 0]]
    assert got.sum(-1).tolist() == [10, 32, 3]


@pytest.mark.parametrize("gen,block,steps", [(32, 8, 32), (32, 16, 8), (24, 8, 12)])
def test_vanilla_matches_official_loop(gen, block, steps):
    m = random_model(seed=5)
    for p in prompts(3, seed=2):
        out = generate(m, [p], gen_length=gen, block_length=block, steps=steps)
        assert out.token_ids[0].tolist() == official_vanilla(m, p, gen, block, steps).tolist()
        assert out.nfe == steps


def test_vanilla_runs_fixed_steps_even_when_they_exceed_the_block():
    m = random_model()
    out = generate(m, [[1, 2, 3]], gen_length=8, block_length=8, steps=12)
    assert out.nfe == 12 and (out.token_ids != MASK).all()


@pytest.mark.parametrize("controller,kw", [("vanilla", {}), ("fast-dllm", {"threshold": 0.5})])
@pytest.mark.parametrize("cache", ["none", "prefix", "dual"])
def test_batch_agrees_with_one_prompt_at_a_time(controller, kw, cache):
    m = random_model(seed=7, scale=0.8)
    ps = prompts(4, seed=9)
    batch = generate(m, ps, gen_length=32, block_length=8, controller=controller, controller_kwargs=kw, cache=cache)
    for i, p in enumerate(ps):
        one = generate(m, [p], gen_length=32, block_length=8, controller=controller, controller_kwargs=kw, cache=cache)
        assert batch.token_ids[i].tolist() == one.token_ids[0].tolist()
        assert batch.nfe_per_sample[i] == one.nfe


def test_trace_invariants_of_vanilla():
    m = random_model(seed=11)
    out = generate(m, prompts(2), gen_length=32, block_length=8, steps=16, record_trace=True)
    tr = out.trace
    S, B, L = tr.conf.shape
    assert (S, B, L) == (16, 2, 32) and out.nfe == 16
    final = out.token_ids
    for t in range(S):
        b = int(tr.block[t])
        new = tr.committed[t]
        assert not new[:, : b * 8].any() and not new[:, (b + 1) * 8:].any()     # only the current block
        assert (new.sum(-1) == 2).all()                                        # 8 tokens / 4 steps
        # a committed token is the step's candidate and is never changed afterwards
        assert (tr.x0[t][new] == final[new]).all()
    assert tr.committed.sum(0).eq(1).all()                                     # each position fixed exactly once


def test_sampling_is_seeded():
    m = random_model(seed=2)
    a = generate(m, prompts(2), gen_length=16, block_length=8, temperature=1.0, seed=4).token_ids
    b = generate(m, prompts(2), gen_length=16, block_length=8, temperature=1.0, seed=4).token_ids
    greedy = generate(m, prompts(2), gen_length=16, block_length=8).token_ids
    assert torch.equal(a, b) and not torch.equal(a, greedy)


@pytest.mark.parametrize("kwargs, message", [
    (dict(gen_length=30, block_length=8), "multiple of block_length"),
    (dict(gen_length=32, block_length=8, steps=6), "multiple of the number of blocks"),
    (dict(cache="full"), "cache must be one of"),
    (dict(controller="nonsense"), "unknown controller"),
    (dict(controller="fast-dllm", threshold=1.5), "threshold"),
])
def test_bad_arguments_are_rejected(tiny_model, kwargs, message):
    with pytest.raises(ValueError, match=message):
        generate(tiny_model, [[1, 2]], **kwargs)


def test_string_prompts_need_a_tokenizer(tiny_model):
    with pytest.raises(ValueError, match="tokenizer"):
        generate(tiny_model, ["hello"])


def test_threshold_controller_uses_fewer_forwards_and_stops_per_block():
    m = random_model(seed=7, scale=0.8)
    fast = generate(m, prompts(2), gen_length=32, block_length=8, controller="fast-dllm", threshold=0.3)
    assert fast.nfe < 32 and (fast.token_ids != MASK).all()
    assert all(sum(r) == n for r, n in zip(fast.steps_per_block, fast.nfe_per_sample))


def test_lengths_default_to_the_checkpoints_own():
    """A checkpoint that names its window (config ``tspd_task``) decodes with it unless told otherwise."""
    from tspd.models.loading import PAPER_LENGTHS, decode_lengths
    model = random_model(extra={"tspd_task": {"gen_length": 16, "block_length": 8}})
    assert decode_lengths(model) == (16, 8)
    out = generate(model, prompts(2))
    assert out.token_ids.shape[1] == 16 and out.nfe == 16                  # 1 token per step over 16
    assert generate(model, prompts(2), gen_length=8).token_ids.shape[1] == 8   # an explicit length wins
    assert decode_lengths(random_model()) == PAPER_LENGTHS                  # no task: the paper's 256 / 32


def test_profile_splits_a_step_into_forward_controller_ce_and_the_rest(tiny_model):
    plain = generate(tiny_model, [[5, 6, 7]], gen_length=16, block_length=8, controller="fast-dllm", threshold=0.9)
    assert plain.forward_seconds is None and plain.controller_seconds is None
    out = generate(tiny_model, [[5, 6, 7]], gen_length=16, block_length=8, controller="fast-dllm", threshold=0.9,
                   ce=True, profile=True)
    assert out.forward_seconds > 0 and out.controller_seconds > 0 and out.ce_seconds > 0
    assert out.control_seconds >= out.controller_seconds + out.ce_seconds
    no_ce = generate(tiny_model, [[5, 6, 7]], gen_length=16, block_length=8, controller="fast-dllm", threshold=0.9,
                     profile=True)
    assert no_ce.ce_seconds == 0.0 and torch.equal(no_ce.token_ids, plain.token_ids)


class Waiting(Controller):
    """Commits the best masked token of each row every ``every``-th forward of a block, nothing in between
    (never, with ``every=0``); without the loop's guarantee of progress."""
    name = "waiting"
    force_progress = False

    def __init__(self, every: int):
        self.every, self.seen = every, 0

    def start_block(self, block):
        self.seen = 0

    def decide(self, view: StepView) -> Decision:
        self.seen += 1
        due = self.every > 0 and self.seen % self.every == 0
        best = view.conf.masked_fill(~view.masked, float("-inf")).argmax(-1, keepdim=True)
        slot = torch.arange(view.masked.shape[1])[None, :] == best
        return Decision(commit=view.masked & slot & due)


def test_a_block_without_progress_ends_in_an_error_not_an_endless_loop(tiny_model):
    """The loop's own bound: ``block_length + 1`` forwards in a row without a commit is a clear error."""
    model, spy = spied(tiny_model)
    with pytest.raises(RuntimeError, match=r"'waiting' committed nothing in 9 forwards of block 0 .*force_progress"):
        generate(model, [[5, 6, 7]], gen_length=16, block_length=8, controller=Waiting(every=0))
    assert len(spy.calls) == 9
    slow = generate(tiny_model, [[5, 6, 7]], gen_length=16, block_length=8, controller=Waiting(every=8))
    assert (slow.token_ids != MASK).all() and slow.nfe == 16 * 8            # 7 idle forwards a commit: allowed
