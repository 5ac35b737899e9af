"""Every committed record: which command writes which file, and the one module that reads and writes it.

=====================================  ==============================================  =========================================
module                                 written by                                      file(s)
=====================================  ==============================================  =========================================
:mod:`~tspd.records.controller_table`  ``python -m tspd controller-table``             ``results/embedded_controllers.json``,
                                                                                       its runs in ``results/controller_table/``
:mod:`~tspd.records.cache_agreement`   ``python -m tspd cache-agreement``              ``results/cache_agreement.json``,
                                                                                       ``results/cache_agreement.samples.jsonl``
:mod:`~tspd.records.lmeval_example`    ``python -m tspd lmeval-example``               ``results/lmeval_example.json``
:mod:`~tspd.records.fresh_clone`       ``bash scripts/time_fresh_clone.sh``            ``results/fresh_clone.json``
:mod:`~tspd.records.bench_loop`        ``python -m tspd bench-loop --out ...``         ``results/bench/loop-<device>.json``
:mod:`~tspd.records.bench_step`        ``python -m tspd bench-step --out ...``         ``results/gpu/<device>.json``
:mod:`~tspd.records.bench_forward`     ``python -m tspd bench-forward --out ...``      ``results/gpu/forward/<device>.json``
:mod:`~tspd.records.regime`            ``python -m tspd regime``                       ``<checkpoint>/regime.json``
:mod:`~tspd.records.dynamics`          ``python -m tspd dynamics``                     ``<checkpoint>/dynamics.json``
:mod:`~tspd.records.train_lm_evals`    ``python -m tspd train-lm``                     ``<checkpoint>/evals.json``
:mod:`~tspd.records.train_lm_probes`   ``python -m tspd train-lm``                     ``<checkpoint>/probes.json``
:mod:`tspd.book.pareto`                the Pareto notebook                             ``results/pareto.json``
:mod:`tspd.book.claims.store`          each claim notebook's verdict cell              ``results/claims/<notebook>.json``
:mod:`tspd.eval.experiments`           ``python -m tspd eval`` and the notebooks       ``results/runs/``, ``results/variants/``
:mod:`tspd.book.lookahead`             the Figure 3 and 4 notebooks                    ``results/variants/lookahead-<key>.pt``
=====================================  ==============================================  =========================================

The last four keep their owners elsewhere (each is the one module that reads and writes its files).
``python -m tspd fill-records`` (:mod:`tspd.book.spans`) writes the pages' sentences from these records.
"""

# record kind -> (owner module, path literals that only the owner may hold; tests/test_records.py checks)
OWNERS = {
    "controller table": ("tspd.records.controller_table", ('"embedded_controllers.json"', '"controller_table"')),
    "cache agreement": ("tspd.records.cache_agreement", ('"cache_agreement.json"', '".samples.jsonl"')),
    "lm-eval example": ("tspd.records.lmeval_example", ('"lmeval_example.json"',)),
    "fresh clone": ("tspd.records.fresh_clone", ('"fresh_clone.json"',)),
    "bench loop": ("tspd.records.bench_loop", ('"loop-*.json"', '/ "bench"')),
    "bench step": ("tspd.records.bench_step", ('/ "gpu"',)),
    "bench forward": ("tspd.records.bench_forward", ('/ "forward"',)),
    "regime": ("tspd.records.regime", ('"regime.json"',)),
    "dynamics": ("tspd.records.dynamics", ('"dynamics.json"',)),
    "train-lm evals": ("tspd.records.train_lm_evals", ('"evals.json"',)),
    "train-lm probes": ("tspd.records.train_lm_probes", ('"probes.json"',)),
    "pareto": ("tspd.book.pareto", ('"pareto.json"',)),
    "claims": ("tspd.book.claims.store", ('/ "claims"',)),
    "lookahead": ("tspd.book.lookahead", ('"lookahead-',)),
}
