"""The zoo's Dream- and LLaDA-MoE-layout models (paper Table 2 in kind): the loop's backbone-specific branches on
trained weights, where a random model's flat confidences could hide a misplaced shift or a stale cache row.

Every zoo model whose ``config.json`` names another backbone than LLaDA's is checked; with none shipped, these
tests have no parameter and pytest reports them as skipped. Each model's regime record is reproduced by
tests/test_regime_record.py.
"""
from __future__ import annotations

import pytest
import torch
from conftest import layout_logits

from tspd import generate, load_model
from tspd.tasks.generated import generated_task
from tspd.models.loading import ZOO, Checkpoint, checkpoint_task

OTHERS = sorted(p.name for p in ZOO.iterdir() if (p / "config.json").is_file()
                and Checkpoint.open(str(p)).backbone != "llada")


@pytest.fixture(scope="module", params=OTHERS)
def zoo(request):
    """(name, loaded model, two test questions of its own task)."""
    name = request.param
    task = generated_task(checkpoint_task(name))
    return name, load_model(name), [task.prompt(p) for p in task.load_split("test", 2)]


def masked_canvas(model, question: str, n_masks: int) -> torch.Tensor:
    return torch.tensor([model.tokenizer.encode(question) + [model.special.mask] * n_masks])


def test_its_logits_are_those_of_its_layouts_reference(zoo):
    name, model, questions = zoo
    ids = masked_canvas(model, questions[0], 64)
    with torch.no_grad():
        ours = model(ids)
    torch.testing.assert_close(ours, layout_logits(ZOO / name, ids), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("mode", ["prefix", "dual"])
def test_a_cached_window_gives_the_full_forwards_rows(zoo, mode):
    """On an unchanged canvas a cache is exact: the window's rows are the full forward's (for Dream, row 0 of the
    window is the output one position to its left, read through the cache)."""
    _, model, questions = zoo
    ids = masked_canvas(model, questions[0], 64)
    s = ids.shape[1] - 64                       # the generated region starts here; the window is its first block
    e = s + 32 if mode == "dual" else ids.shape[1]
    with torch.no_grad():
        cache = model.new_cache()
        full = model(ids, cache=cache, offset=0)
        window = model(ids[:, s:e], cache=cache, offset=s)
    # 1e-4: the MoE's experts see the window's tokens in other groups than the full forward's, so their matmuls
    # round differently (up to 1.1e-5 measured on roster-moe); a stale or misplaced row is off by far more
    torch.testing.assert_close(window, full[:, s:e], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("cache", ["none", "prefix", "dual"])
def test_the_fast_path_decodes_the_eager_loops_tokens(zoo, cache):
    """The static-buffer path (CUDA graphs on a GPU where the backbone allows them; eager replay on a CPU)."""
    _, model, questions = zoo
    run = dict(controller="fast-dllm", threshold=0.9, cache=cache)
    eager, fast = generate(model, questions, **run), generate(model, questions, fast=True, **run)
    assert torch.equal(fast.token_ids, eager.token_ids) and fast.nfe == eager.nfe


@pytest.mark.parametrize("name", sorted(p.name for p in ZOO.iterdir() if (p / "tokenizer_config.json").is_file()))
def test_a_zoo_tokenizer_loads_without_a_library_warning(name, recwarn):
    """No FutureWarning of transformers on the book's pages: a checkpoint's null ``rope_scaling`` (kept, since
    config.json is in its fingerprint) is not parsed to load its tokenizer."""
    from tspd.models.loading import load_tokenizer
    assert load_tokenizer(name).mask_token == "<|mdm_mask|>"
    assert [str(w.message) for w in recwarn if issubclass(w.category, (FutureWarning, DeprecationWarning))] == []
