"""Wall time per phase of a ``generate`` call (``profile=True``): model forwards, statistics, CE, the
controller, the commit (paper Section 5.4 compares the controller's and CE's time with a forward's)."""
from __future__ import annotations

import time

import torch


class PhaseClock:
    """Accumulates wall time per phase; synchronises CUDA at each boundary. Disabled, it does nothing."""

    def __init__(self, device: torch.device, enabled: bool):
        self.enabled, self.cuda = enabled, device.type == "cuda"
        self.total: dict[str, float] = {}
        self.t = 0.0

    def _now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def start(self) -> None:
        if self.enabled:
            self.t = self._now()

    def lap(self, phase: str) -> None:
        if self.enabled:
            now = self._now()
            self.total[phase] = self.total.get(phase, 0.0) + now - self.t
            self.t = now

    def seconds(self) -> dict[str, float | None]:
        """``Generation``'s timing fields: forwards, all the rest (control), the controller and CE;
        None each when disabled."""
        if not self.enabled:
            return dict(forward_seconds=None, control_seconds=None, controller_seconds=None, ce_seconds=None)
        return dict(forward_seconds=self.total.get("forward", 0.0),
                    control_seconds=sum(v for k, v in self.total.items() if k != "forward"),
                    controller_seconds=self.total.get("controller", 0.0), ce_seconds=self.total.get("ce", 0.0))


__all__ = ["PhaseClock"]
