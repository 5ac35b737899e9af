"""Fast decoding steps: every window forward of the generation loop replayed from a CUDA graph.

Why: at LLaDA-8B scale a dual-cache step over a 32-token block needs to read 16 GB of weights (about
5 ms on an H100), but an eager forward launches ~700 kernels one by one from Python, and the GPU waits
for the host more than it computes. The windows the loop forwards have fixed shapes, and each one
recurs: ``[0, T)`` at every block's first step (and at every step without a cache), ``[s, e)`` (dual
cache) or ``[s, T)`` (prefix cache) at every later step of block ``[s, e)``. So each window is
captured once into a CUDA graph and then replayed: one launch per forward.

A graph reads and writes fixed addresses, so a :class:`StepGraphs` owns static memory: the canvas,
the RoPE positions, the padding mask and the KV cache it was captured with. A call copies the window's
tokens into the static canvas, replays, and returns a copy of the logits (the static output is
overwritten by the next replay). A loaded model keeps the runner of its last canvas shape in its
``graphs`` field (:class:`tspd.models.loading.LoadedModel`, :func:`step_graphs`): ``generate`` calls with
the same batch size, canvas length, cache mode and padding reuse its graphs, a different shape replaces
it. Graphs are captured lazily, the first time a window is used (two warm-up forwards and a capture
each), so a new shape costs a few extra forwards once.

A backbone whose forward synchronises with the host cannot be captured (``graph_capturable = False``:
LLaDA-MoE, whose expert routing reads group sizes on the host); it runs the static path eagerly.
On a CPU, or with ``capture=False``, the very same static-buffer path runs eagerly: that is what the
CPU tests compare token for token with the plain loop; the bench (``bench-step --fast --parity``)
checks the captured graphs on the GPU the same way.
"""
from __future__ import annotations

import torch

from tspd.models.loading import LoadedModel


class StepGraphs:
    """Window forwards of one canvas shape, replayed from CUDA graphs.

    Args:
        model: a :class:`~tspd.models.loading.LoadedModel` whose network has the ``forward(ids,
            attention_mask, position_ids, cache, offset, logits_from)`` contract of :class:`tspd.LLaDAModelLM`.
        batch, length: the canvas shape [B, T] (prompt + generated region).
        cached: whether forwards use a KV cache (``generate``'s ``cache`` is ``prefix`` or ``dual``).
        padded: whether the batch has left padding (then an attention mask is passed).
        capture: record CUDA graphs (default: on a CUDA device) or run the same path eagerly.
        warmup: eager forwards on a side stream before a capture (cuBLAS and allocator warm-up).
    """

    def __init__(self, model: LoadedModel, batch: int, length: int, cached: bool, padded: bool,
                 capture: bool | None = None, warmup: int = 2):
        dev = model.device
        self.model, self.key = model, (batch, length, cached, padded)
        self.capture = default_capture(model) if capture is None else capture
        if self.capture and not model.graph_capturable:
            raise ValueError(f"{type(model.module).__name__}'s forward synchronises with the host, it cannot be captured")
        if self.capture and dev.type != "cuda":
            raise ValueError(f"CUDA graphs need a CUDA device, the model is on {dev}")
        self.warmup = warmup
        self.x = torch.zeros(batch, length, dtype=torch.long, device=dev)
        self.pos = torch.zeros(batch, length, dtype=torch.long, device=dev)
        self.attn = torch.ones(batch, length, dtype=torch.long, device=dev) if padded else None
        self.cache = model.new_cache() if cached else None
        self.graphs: dict[tuple[int, int, int], tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}

    def load(self, pos: torch.Tensor, attention_mask: torch.Tensor | None) -> None:
        """Copy one call's RoPE positions and padding mask into the static buffers."""
        if (attention_mask is None) != (self.attn is None):
            raise ValueError("padding differs from the shape this runner was built for")
        self.pos.copy_(pos)
        if attention_mask is not None:
            self.attn.copy_(attention_mask)

    def _forward(self, w0: int, w1: int, logits_from: int) -> torch.Tensor:
        return self.model(self.x[:, w0:w1], attention_mask=self.attn, position_ids=self.pos[:, w0:w1],
                          cache=self.cache, offset=w0, logits_from=logits_from)

    def _record(self, w0: int, w1: int, logits_from: int) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
        side = torch.cuda.Stream(device=self.x.device)
        side.wait_stream(torch.cuda.current_stream(self.x.device))
        with torch.cuda.stream(side):
            for _ in range(self.warmup):   # writes the same keys/values the replay will write
                self._forward(w0, w1, logits_from)
        torch.cuda.current_stream(self.x.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self._forward(w0, w1, logits_from)
        self.graphs[(w0, w1, logits_from)] = graph, out
        return graph, out

    def __call__(self, x: torch.Tensor, w0: int, w1: int, logits_from: int = 0) -> torch.Tensor:
        """Logits [B, w1 - w0 - logits_from, V] of canvas window ``[w0, w1)`` of ``x`` (the loop's canvas)."""
        if self.cache is not None and w0 > 0 and not (self.graphs or self.cache.length):
            raise RuntimeError("a cached window forward needs a full forward (window [0, T)) first")
        self.x[:, w0:w1].copy_(x[:, w0:w1])
        if not self.capture:
            return self._forward(w0, w1, logits_from)
        graph, out = self.graphs.get((w0, w1, logits_from)) or self._record(w0, w1, logits_from)
        graph.replay()
        return out.clone()


def default_capture(model: LoadedModel) -> bool:
    """Capture on a CUDA device, unless the backbone's forward synchronises (LLaDA-MoE's routing)."""
    return model.device.type == "cuda" and model.graph_capturable


def step_graphs(model: LoadedModel, batch: int, length: int, cached: bool, padded: bool,
                capture: bool | None = None) -> StepGraphs:
    """The model's runner for this canvas shape: its kept one (``model.graphs``) when the shape matches,
    else a new one, kept in place of the old one."""
    runner = model.graphs
    key = (batch, length, cached, padded)
    want = default_capture(model) if capture is None else capture
    if runner is None or runner.key != key or runner.capture != want:
        model.graphs = None               # free the old graphs before capturing new ones
        runner = model.graphs = StepGraphs(model, batch, length, cached, padded, capture=want)
    return runner
