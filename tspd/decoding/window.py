"""One step's forward (paper Algorithm 1: ``p <- M(X)``, one NFE) over the window the KV cache needs.

Without a cache every forward covers the whole canvas ``[0, T)``. With Fast-dLLM's caches (paper
Table 4) a block's first forward covers the whole canvas and fills the cache; later ones cover the
block ``[s, e)`` (dual) or the block and everything after it ``[s, T)`` (prefix), reading the rest
from the cache. Only the generated part of a window gets logits, and of it only what a step reads
(:meth:`WindowForward.window`): the block alone for vanilla and Fast-dLLM. ``fast`` replays each window from a
CUDA graph over static buffers (:mod:`tspd.decoding.graphs`); on a CPU the same path runs eagerly.
"""
from __future__ import annotations

import functools

import torch

from tspd.decoding.canvas import Canvas


class WindowForward:
    """Forwards of one ``generate`` call: the window choice, the cache or graph runner, the logits."""

    def __init__(self, model, canvas: Canvas, cache: str, fast: bool, beyond: tuple[bool, bool] = (True, True)):
        self.model, self.canvas, self.cache = model, canvas, cache
        self.beyond = (True, True) if fast else beyond   # logits (left, right) of the block too (see window)
        self.vocab_size = model.config.vocab_size
        self.views: dict[tuple[int, int], tuple] = {}   # (w0, w1) -> the canvas' ids and positions there
        B, T = canvas.x.shape
        self.runner = self.kv = None
        if fast:
            from tspd.decoding.graphs import step_graphs
            self.runner = step_graphs(model, B, T, cached=cache != "none", padded=canvas.attn is not None)
            self.runner.load(canvas.pos, canvas.attn)
        elif cache != "none":
            self.kv = model.new_cache()

    def window(self, s: int, e: int, first: bool) -> tuple[int, int, int, int]:
        """``(w0, w1, g0, g1)``: the canvas window ``[w0, w1)`` of a step of block ``[s, e)`` and the positions
        ``[g0, g1)`` that get logits: the generated region at most, and of it only what the steps read
        beyond the block (``beyond``, :meth:`tspd.decoding.reads.StepPlan.reads_beyond_block`), so the
        head runs on fewer rows. The CUDA-graph path keeps the generated region, one graph per window
        rather than one per block."""
        T, P = self.canvas.x.shape[1], self.canvas.prompt_length
        if self.cache == "none" or first:
            w0, w1 = 0, T
        else:
            w0, w1 = s, (e if self.cache == "dual" else T)
        left, right = self.beyond
        return w0, w1, max(w0, P if left else s), w1 if right else e   # (a block starts at or after P)

    def __call__(self, w0: int, w1: int, g0: int, g1: int) -> torch.Tensor:
        """Candidate logits [B, g1 - g0, V] of the canvas window (MASK and the head's padding excluded)."""
        c = self.canvas
        if self.runner is not None:
            logits = self.runner(c.x, w0, w1, g0 - w0)
        else:
            ids, pos = self.window_views(w0, w1)
            logits = self.model(ids, attention_mask=c.attn, position_ids=pos, cache=self.kv, offset=w0,
                                logits_from=g0 - w0, logits_to=g1 - w0)
        return candidates_only(logits, self.vocab_size, c.mask_id)

    def window_views(self, w0: int, w1: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The canvas ids and RoPE positions of window ``[w0, w1)``: views, made once per window (a block's
        window recurs at each of its steps; commits write the canvas in place, so a view stays current)."""
        views = self.views.get((w0, w1))
        if views is None:
            views = self.views[(w0, w1)] = self.canvas.x[:, w0:w1], self.canvas.pos[:, w0:w1]
        return views


def candidates_only(logits: torch.Tensor, vocab_size: int, mask_id: int) -> torch.Tensor:
    """Drop the head's padding rows beyond ``vocab_size`` and forbid [MASK] as a candidate token.

    LLaDA's reference code does neither; with a trained model neither ever wins the argmax, but a
    committed [MASK] would silently leave its slot undecoded (dInfer excludes it the same way).
    """
    if logits.shape[-1] > vocab_size:
        logits = logits[..., :vocab_size]
    if mask_id < vocab_size:   # one operation with an index made once (select + fill_ is two)
        logits.index_fill_(-1, _index(mask_id, logits.device), float("-inf"))
    return logits


@functools.lru_cache(maxsize=16)
def _index(i: int, device: torch.device) -> torch.Tensor:
    """``tensor([i])`` on ``device``, made once; never written to."""
    return torch.tensor([i], device=device)


__all__ = ["WindowForward", "candidates_only"]
