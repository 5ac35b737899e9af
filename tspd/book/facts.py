"""Which table each marked span of the pages holds: ``<!-- NAME -->`` is ``FACTS[NAME]()``, a Markdown table written
from its record by ``python -m tspd fill-records`` (:mod:`tspd.book.spans`). Each table lives beside its
experiment's record; the comment after each says the pages that show it."""
from __future__ import annotations

from typing import Callable

from tspd.bench import forward as bench_forward, loop as bench_loop, step as bench_step
from tspd.book import controller_table, dashboard, headline, model_card, regime
from tspd.book.claims import summary as claims
from tspd.measures import cache_agreement, dynamics, lmeval_example, oracle
from tspd.records import fresh_clone

FACTS: dict[str, Callable[[], str]] = {
    "headline": headline.headline_table,                          # README, status
    "status-dashboard": dashboard.zoo_table,                      # status
    "model-accuracy": model_card.model_table,                     # intro, status
    "regime-targets": regime.targets_table,                       # intro, status
    "controller-overview": controller_table.overview_table,       # intro, status
    "controller-comparisons": controller_table.comparisons_table,  # controllers
    "cache-agreement": cache_agreement.agreement_table,           # controllers
    "claims-summary": claims.summary_table,                       # status
    "claims-decided": claims.decisive_table,                      # status
    "dynamics-table": dynamics.zoo_dynamics_table,                # status
    "oracle-shifted": oracle.shifted_table,                       # status
    "gpu-speed": bench_step.speed_table,                          # status
    "gpu-forward": bench_forward.forward_table,                   # status
    "loop-overhead": bench_loop.overhead_table,                   # status
    "fresh-clone-times": fresh_clone.times_table,                 # README, status
    "lmeval-example": lmeval_example.example_table,               # lmeval
}

__all__ = ["FACTS"]
