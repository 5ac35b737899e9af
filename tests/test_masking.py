"""Training masks (tspd.training.masking): LLaDA's uniform masking and the schemes that keep earlier lines visible."""
from __future__ import annotations

import pytest
import torch

from tspd.training.masking import Masking, mask_answer

EOS = 1


def _answers(B: int, L: int, length: int) -> torch.Tensor:
    a = torch.full((B, L), EOS)
    a[:, :length] = 7
    return a


def _draw(masking: Masking, B=4000, L=64, length=40, t=0.5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return mask_answer(_answers(B, L, length), torch.full((B, 1), t), EOS, masking, g)


def test_uniform_masks_each_position_with_probability_t():
    masked, scored, _ = _draw(Masking("uniform"), t=0.3)
    assert torch.equal(masked, scored)
    assert abs(masked.float().mean().item() - 0.3) < 0.01


def test_mix_zero_is_uniform_whatever_the_scheme():
    a = _draw(Masking("uniform"))
    b = _draw(Masking("prefix", mix=0.0))
    assert torch.equal(a[0], b[0])


def test_prefix_keeps_a_clean_prefix_inside_the_answer():
    masked, scored, _ = _draw(Masking("prefix", mix=1.0), t=1.0, length=40)
    assert torch.equal(masked, scored)
    cuts = (~masked).sum(-1)              # t = 1: everything after the cut is masked
    for row, cut in zip(masked, cuts):    # clean positions form a prefix
        assert not row[:cut].any() and row[cut:].all()
    assert cuts.min() == 0 and cuts.max() == 40     # the cut ranges over the answer, never into the EOS fill
    assert abs(cuts.float().mean().item() - 20) < 1.0


def test_block_scores_one_block_and_masks_the_blocks_after_it():
    masked, scored, _ = _draw(Masking("block", mix=1.0, block_length=32), t=0.5, length=40)
    for m, s in zip(masked, scored):
        blocks = s.view(2, 32).any(-1)
        assert blocks.sum() <= 1                      # scored positions lie in one block
        if s[:32].any():
            assert m[32:].all()                       # later blocks fully masked
        if s[32:].any():
            assert not m[:32].any()                   # earlier blocks clean
    assert not (scored & ~masked).any()
    assert scored[:, :32].any(-1).float().mean().item() == pytest.approx(0.5, abs=0.05)


def test_mix_is_the_share_of_structured_samples():
    masked, _, _ = _draw(Masking("prefix", mix=0.25), t=1.0)
    structured = (~masked[:, :40]).any(-1)            # t = 1: only prefix samples have clean positions
    assert structured.float().mean().item() == pytest.approx(0.25 * 40 / 41, abs=0.03)


def test_causal_masks_everything_after_a_cut_set_by_t():
    g = torch.Generator().manual_seed(0)
    t = torch.tensor([[1.0], [0.5], [1e-3]])
    masked, scored, ratio = mask_answer(_answers(3, 64, 40), t, EOS, Masking("causal", mix=1.0), g)
    assert torch.equal(masked, scored)
    cuts = (~masked).sum(-1)
    for row, cut in zip(masked, cuts):
        assert not row[:cut].any() and row[cut:].all()          # a clean prefix, the rest masked
    assert cuts.tolist() == [0, 20, 40]                          # the first (1 - t) of the answer clean
    assert ratio[:, 0].tolist() == pytest.approx([1.0, 44 / 64, 24 / 64])   # the EOS fill is always masked


@pytest.mark.parametrize("kwargs", [dict(scheme="autoregressive"), dict(mix=1.5), dict(block_length=0)])
def test_bad_options_say_what_is_wrong(kwargs):
    with pytest.raises(ValueError, match="masking|mix|block"):
        Masking(**kwargs)


def test_structured_masking_needs_the_eos_id():
    with pytest.raises(ValueError, match="EOS"):
        mask_answer(_answers(2, 8, 4), torch.full((2, 1), 0.5), None, Masking("prefix", mix=1.0))


def test_altered_rows_keep_their_clean_prefix_and_mask_everything_after_the_cut():
    g = torch.Generator().manual_seed(0)
    t = torch.tensor([[1.0], [0.5], [1.0]])
    clean = torch.tensor([[10], [10], [0]])                   # rows 0-1 altered, row 2 an ordinary one
    masked, scored, ratio = mask_answer(_answers(3, 64, 40), t, EOS, Masking("uniform"), g, clean)
    assert torch.equal(masked, scored)
    cuts = (~masked).sum(-1)
    assert cuts[:2].tolist() == [10, 25]                      # clean up to 10, then (1 - t) of the rest
    for row, cut in zip(masked[:2], cuts[:2]):
        assert not row[:cut].any() and row[cut:].all()
    assert masked[2].all()                                     # t = 1 under uniform masking: all masked
    assert ratio[:, 0].tolist() == pytest.approx([54 / 64, 39 / 64, 1.0])


def test_a_partial_alteration_scores_only_up_to_its_until_and_masks_it():
    g = torch.Generator().manual_seed(0)
    t = torch.tensor([[1.0], [0.0], [0.5]])
    clean, until = torch.tensor([[10], [10], [10]]), torch.tensor([[20], [20], [0]])   # row 2: a full alteration
    masked, scored, ratio = mask_answer(_answers(3, 64, 40), t, EOS, Masking("uniform"), g, clean, until)
    cuts = (~masked).sum(-1).tolist()
    assert cuts == [10, 19, 25]                               # rows 0-1: the cut in 10..19, never past the span
    assert scored[0].nonzero()[:, 0].tolist() == list(range(10, 20))
    assert scored[1].nonzero()[:, 0].tolist() == [19]         # t = 0: still the last learned token
    assert torch.equal(scored[2], masked[2])                  # until 0: scored to the end as before
    assert masked[0, 20:].all()                               # what follows is masked, not learned
    assert ratio[:, 0].tolist() == pytest.approx([10 / 64, 1 / 64, 39 / 64])
