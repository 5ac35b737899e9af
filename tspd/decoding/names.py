"""A decoding's names: the one place that spells a (controller, CE, cache) setting.

Every table, bench file, record and figure names a decoding through these two functions (or
:attr:`tspd.decoding.config.DecodeConfig.label` / :meth:`~tspd.decoding.config.DecodeConfig.slug`, which
call them), so one decoding has one name in each register:

- :func:`display_name`, as prose, tables and figures say it: ``TSPD + CE``, ``Fast-dLLM / dual``;
- :func:`slug`, compact, as files key it: ``tspd+ce/dual`` (bench files, run labels), ``tspd_ce_dual``
  (``regime.json``'s rows), ``tspd|ce=on|cache=dual`` (the controller table's rows).

A stored key or a command-line name is looked up in :func:`by_slug`, the table of every slug this module
makes; nothing splits a name to recover its settings.
"""
from __future__ import annotations

from tspd.decoding.controllers import REGISTRY
from tspd.validate import CACHE_MODES

# each controller as prose names it (vanilla is a common noun; the others are the methods' own names)
DISPLAY = {"vanilla": "vanilla", "fast-dllm": "Fast-dLLM", "prophet": "Prophet", "learn2pd": "Learn2PD",
           "credit": "Credit Decoding", "joint": "Joint bound", "egp": "EGP", "tspd": "TSPD"}

# the compact spellings, each as the files that use it store it: separator -> (shorter controller names, CE on,
# CE off, what comes before the cache, whether cache "none" is spelt out)
_SLUGS = {"/": ({}, "+ce", "", "/", True),                       # tspd+ce/dual, vanilla/none, fast-dllm
          "_": ({"fast-dllm": "fast"}, "_ce", "", "_", False),   # tspd_ce_dual, fast_prefix, vanilla
          "|": ({}, "|ce=on", "|ce=off", "|cache=", True)}       # tspd|ce=on|cache=dual


def display_name(controller: str, ce: bool = False, cache: str | None = None) -> str:
    """``TSPD + CE``, or with a cache ``TSPD + CE / dual``: the decoding as prose, tables and figures name it."""
    name = DISPLAY.get(controller, controller) + (" + CE" if ce else "")
    return name if cache is None else f"{name} / {cache}"


def slug(controller: str, ce: bool = False, cache: str | None = None, sep: str = "/") -> str:
    """The decoding's compact name in one of the stored spellings, chosen by ``sep``: ``/`` (bench files, run
    labels: ``tspd+ce/dual``), ``_`` (``regime.json``'s rows: ``tspd_ce_dual``, ``fast``; no cache is
    no suffix) or ``|`` (the controller table's rows: ``tspd|ce=on|cache=dual``). ``cache`` None: no cache part."""
    if sep not in _SLUGS:
        raise ValueError(f"a slug's separator is one of {', '.join(_SLUGS)}, got {sep!r}")
    short, on, off, before_cache, none_spelt = _SLUGS[sep]
    name = short.get(controller, controller) + (on if ce else off)
    if cache is None or (cache == "none" and not none_spelt):
        return name
    return f"{name}{before_cache}{cache}"


def by_slug(sep: str = "/") -> dict[str, tuple[str, bool, str | None]]:
    """Every decoding's :func:`slug` (with and without its cache part) -> ``(controller, ce, cache)``: how a
    stored key or a command-line name finds its settings (``cache`` None where the slug has no cache part)."""
    out: dict[str, tuple[str, bool, str | None]] = {}
    for controller in REGISTRY:
        for ce in (False, True):
            for cache in (None, *CACHE_MODES):
                out.setdefault(slug(controller, ce, cache, sep), (controller, ce, cache))
    return out


__all__ = ["DISPLAY", "display_name", "slug", "by_slug"]
