"""Loaded models kept per process, so that the notebooks' many runs of one checkpoint load it once.

:func:`get_model` is what the run registry (:mod:`tspd.eval.experiments`), the trace variants
(:mod:`tspd.training.variants`) and the look-ahead figures load through; :func:`model_fingerprint` is what
their stored results remember of the weights (a changed checkpoint makes them stale).
"""
from __future__ import annotations

from collections import OrderedDict

import torch

from tspd.models.loading import Checkpoint, CheckpointError, LoadedModel, load_model

MAX_MODELS = 2           # models kept loaded per process (an 8B model is 16 GB in bf16)
_MODELS: "OrderedDict[tuple, LoadedModel]" = OrderedDict()


def get_model(model: "str | Checkpoint", device: str = "cpu", dtype: str | None = None) -> LoadedModel:
    """A loaded model (a name, a directory or an opened :class:`Checkpoint`), cached per process by
    (checkpoint directory, device, dtype); the least recent is evicted."""
    checkpoint = Checkpoint.open(model)
    key = (checkpoint.path, device, dtype)
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    while len(_MODELS) >= MAX_MODELS:
        _MODELS.popitem(last=False)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    _MODELS[key] = load_model(checkpoint, device=device, dtype=dtype)
    return _MODELS[key]


def model_fingerprint(model: "str | Checkpoint") -> str | None:
    """:meth:`Checkpoint.fingerprint` of ``model`` (config.json and its weight files' sizes and first / last
    MiB), or None when ``model`` is no checkpoint."""
    try:
        return Checkpoint.open(model).fingerprint()
    except CheckpointError:
        return None


__all__ = ["get_model", "model_fingerprint", "MAX_MODELS"]
