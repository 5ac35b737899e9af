"""LLaDA's low-confidence remasking (Nie et al. 2025, official ``generate``; paper Section 3.1.1).

Each block runs exactly ``steps_per_block`` forwards. At step i of a block the ``quota`` most confident
masked positions of the block are committed, the quota following LLaDA's schedule: n // steps tokens
per step, the remainder going to the first steps (:func:`tspd.decoding.schedule.num_transfer_tokens`).
"""
from __future__ import annotations

from tspd.decoding.controllers.base import Controller, Decision, StepView, top_k_mask


class Vanilla(Controller):
    name = "vanilla"
    reads = frozenset({"quota"})   # the candidates' confidences and the schedule
    fixed_schedule = True
    force_progress = False   # the schedule decides; trailing steps may commit nothing when steps > n

    def decide(self, view: StepView) -> Decision:
        return Decision(commit=top_k_mask(view.conf, view.masked, view.quota, view.uniform_quota), within_masked=True)
