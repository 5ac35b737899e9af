"""TorchScript for a step's small tensor functions, where it runs the very kernels eager PyTorch runs
(the overhead budget of paper Section 5.4).

A decoding step of a small model is many operations on tensors of a few dozen numbers, so much of an
operation's cost is the Python call into PyTorch, not the arithmetic. TorchScript runs a function's
operations from its own interpreter instead. Without a fuser it calls the same ATen kernels in the same
order, so the results are the eager ones bit for bit (``tests/test_fast_paths.py`` checks it on CE).

:func:`compiled` hands back the eager function itself wherever that does not hold or is not wanted:
on a device other than the CPU (a GPU's fuser is on by default), when a CPU fuser has been switched on
(NNC or oneDNN Graph would change the rounding), when the environment sets ``TSPD_TORCHSCRIPT=0``, and
when scripting fails (no source files to read; a PyTorch without TorchScript, which 2.13 deprecates).
"""
from __future__ import annotations

import functools
import os
import warnings

import torch

ENV = "TSPD_TORCHSCRIPT"   # "0": every step function runs eagerly


def cpu_fuser_on() -> bool:
    """Whether TorchScript would fuse operations on the CPU (off unless someone switched it on)."""
    nnc = getattr(torch._C, "_jit_can_fuse_on_cpu", lambda: False)()
    return bool(nnc or torch.jit.onednn_fusion_enabled())


def compiled(fn, device):
    """``fn`` scripted by TorchScript for tensors on ``device`` where that is bit for bit ``fn``, else ``fn``."""
    if torch.device(device).type != "cpu" or os.environ.get(ENV, "1") == "0" or cpu_fuser_on():
        return fn
    return _script(fn)


@functools.cache
def _script(fn):
    """``torch.jit.script(fn)``, made once per function; ``fn`` itself, with a warning, where it fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)   # TorchScript's deprecation: the fallback covers it
            return torch.jit.script(fn)
    except Exception as e:   # any failure to compile means: run eagerly
        warnings.warn(f"{fn.__qualname__} runs eagerly: TorchScript could not compile it ({type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''}); set {ENV}=0 to skip trying", stacklevel=2)
        return fn


__all__ = ["ENV", "compiled", "cpu_fuser_on"]
