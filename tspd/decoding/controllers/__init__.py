"""Decoding controllers, selected by name (``--controller NAME``), and the check of a controller's settings.

Each controller is a short class against :class:`StepView` / :class:`Decision` (:mod:`.base`); the
learned ones (TSPD, Learn2PD) keep their trained weights as :mod:`.weights` says.
"""
from __future__ import annotations

import importlib
import inspect

from tspd.decoding.controllers.base import Controller, Decision, StepView, rank_in_row, top_k_mask, top_one
from tspd.validate import UsageError, check_threshold

# controller name -> "module:Class" (modules imported on demand)
REGISTRY = {
    "vanilla": "tspd.decoding.controllers.vanilla:Vanilla",
    "fast-dllm": "tspd.decoding.controllers.fast_dllm:FastDLLM",
    "prophet": "tspd.decoding.controllers.prophet:Prophet",
    "learn2pd": "tspd.decoding.controllers.learn2pd:Learn2PD",
    "credit": "tspd.decoding.controllers.credit:CreditDecoding",
    "joint": "tspd.decoding.controllers.joint:JointBound",
    "egp": "tspd.decoding.controllers.egp:EGP",
    "tspd": "tspd.decoding.controllers.tspd:TSPD",
}


def controller_class(controller: str) -> type[Controller]:
    if controller not in REGISTRY:
        raise UsageError(f"unknown controller {controller!r}: choose one of {', '.join(sorted(REGISTRY))}")
    module, cls = REGISTRY[controller].split(":")
    return getattr(importlib.import_module(module), cls)


def make_controller(controller: str, **kwargs) -> Controller:
    """A controller instance from its registry name (extra kwargs go to its constructor)."""
    return controller_class(controller)(**kwargs)


def check_controller(controller: str, controller_kwargs: dict | None = None, for_decoding: bool = True) -> None:
    """A known controller given only arguments it takes; thresholds in (0, 1]."""
    cls = controller_class(controller)
    kwargs = dict(controller_kwargs or {})
    params = {} if cls.__init__ is object.__init__ else dict(inspect.signature(cls.__init__).parameters)
    params.pop("self", None)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    if for_decoding and "reference" in params and params["reference"].default is inspect.Parameter.empty \
            and "reference" not in kwargs:
        raise UsageError(f"controller {controller!r} is the trace-collection oracle (it needs each prompt's vanilla "
                         f"answer): use `python -m tspd collect-traces --controller {controller}`")
    unknown = [k for k in kwargs if k not in params and not takes_any]
    if unknown:
        takes = [p for p in params if params[p].kind is not params[p].VAR_POSITIONAL]
        raise UsageError(f"controller {controller!r} takes no {', '.join(unknown)}"
                         + (f" (it takes {', '.join(takes)})" if takes else "")
                         + ("; for a confidence threshold use --controller fast-dllm" if "threshold" in unknown else ""))
    if kwargs.get("threshold") is not None:
        check_threshold(kwargs["threshold"])


def decoding_controllers() -> list[str]:
    """The controllers a decoding may name (``generate``'s ``--controller``): every registered one but a trace-collection
    oracle (EGP needs each prompt's vanilla answer; ``collect-traces --controller egp`` runs it)."""
    out = []
    for name in REGISTRY:
        try:
            check_controller(name, {})
        except UsageError:
            continue
        out.append(name)
    return out


__all__ = ["Controller", "Decision", "StepView", "make_controller", "controller_class", "check_controller", "decoding_controllers",
           "rank_in_row", "top_k_mask", "top_one", "REGISTRY"]
