"""Decoding controllers, selected by name (``--policy NAME``)."""
from __future__ import annotations

import importlib

from tspd.decoding.controllers.base import Controller, Decision, StepView, rank_in_row, top_k_mask

# policy name -> "module:Class" (modules imported on demand)
REGISTRY = {
    "vanilla": "tspd.decoding.controllers.vanilla:Vanilla",
    "fast-dllm": "tspd.decoding.controllers.fast_dllm:FastDLLM",
    "prophet": "tspd.decoding.controllers.prophet:Prophet",
    "learn2pd": "tspd.decoding.controllers.learn2pd:Learn2PD",
    "credit": "tspd.decoding.controllers.credit:CreditDecoding",
    "egp": "tspd.decoding.controllers.egp:EGP",
    "tspd": "tspd.decoding.controllers.tspd:TSPD",
}


def make_controller(policy: str | Controller, **kwargs) -> Controller:
    """A controller instance from its registry name (extra kwargs go to its constructor)."""
    if isinstance(policy, Controller):
        if kwargs:
            raise ValueError("policy kwargs given together with a ready Controller instance")
        return policy
    if policy not in REGISTRY:
        raise ValueError(f"unknown policy {policy!r}; choose one of {sorted(REGISTRY)}")
    module, cls = REGISTRY[policy].split(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)


__all__ = ["Controller", "Decision", "StepView", "make_controller", "rank_in_row", "top_k_mask", "REGISTRY"]
