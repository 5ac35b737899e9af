"""Decoding: the one generation loop and what plugs into it (paper Section 3, Algorithm 1).

- :mod:`tspd.decoding.config`: ``DecodeConfig``, how one generation is decoded, checked once
- :mod:`tspd.decoding.names`: a decoding's names (``TSPD + CE``, ``tspd+ce/dual``), spelt in one place
- :mod:`tspd.decoding.loop`: ``generate()``, block-wise masked denoising with a pluggable controller, and
  the pieces it reads like Algorithm 1 with: :mod:`~tspd.decoding.canvas` (the canvas X),
  :mod:`~tspd.decoding.window` (one forward over the window the cache needs), :mod:`~tspd.decoding.history`
  (the per-token state H), :mod:`~tspd.decoding.recorder` (``record_trace``: the decoding's trace),
  :mod:`~tspd.decoding.clock` (``profile``)
- :mod:`tspd.decoding.controllers`: vanilla, Fast-dLLM, Prophet, Learn2PD, Credit Decoding, EGP, TSPD
- :mod:`tspd.decoding.extrapolate`: Confidence Extrapolation (Section 3.3)
- :mod:`tspd.decoding.features`: per-step statistics and their running averages, what the controllers read
- :mod:`tspd.decoding.reads`: statistics on demand, what each step computes from what its controller, CE and
  recorder declare they read
- :mod:`tspd.decoding.schedule`: LLaDA's fixed tokens-per-step schedule
- :mod:`tspd.decoding.graphs`: the CUDA-graph fast path
- :mod:`tspd.decoding.torchscript`: a step function under TorchScript on a CPU (CE's), bit for bit the
  eager one, with the eager fallback (``TSPD_TORCHSCRIPT=0``)

It depends on :mod:`tspd.models` (the forward), :mod:`tspd.validate` and :mod:`tspd.options`, never on
evaluation, training or the book.
"""
