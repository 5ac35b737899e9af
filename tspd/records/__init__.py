"""Every committed record: which command writes which file, and the one module that reads and writes it.

=====================================  ==============================================  =========================================
module                                 written by                                      file(s)
=====================================  ==============================================  =========================================
:mod:`~tspd.records.fresh_clone`       ``bash scripts/time_fresh_clone.sh``            ``results/fresh_clone.json``
:mod:`~tspd.records.train_lm_evals`    ``python -m tspd train-lm``                     ``<checkpoint>/evals.json``
:mod:`~tspd.records.train_lm_probes`   ``python -m tspd train-lm``                     ``<checkpoint>/probes.json``
:mod:`~tspd.records.training_md`       ``python -m tspd train-lm``, ``regime``         ``<checkpoint>/TRAINING.md``
:mod:`~tspd.records.runs`              ``python -m tspd eval`` and the notebooks       ``results/runs/`` (a notebook's
                                                                                       ``results_dir``)
:mod:`tspd.bench.loop`                 ``python -m tspd bench-loop --out ...``         ``results/bench/loop-<device>.json``
:mod:`tspd.bench.step`                 ``python -m tspd bench-step --out ...``         ``results/gpu/<device>.json``
:mod:`tspd.bench.forward`              ``python -m tspd bench-forward --out ...``      ``results/gpu/forward/<device>.json``
:mod:`tspd.book.controller_table`      ``python -m tspd controller-table``             ``results/embedded_controllers.json``,
                                                                                       its runs in ``results/controller_table/``
:mod:`tspd.book.pareto`                the Pareto notebook                             ``results/pareto.json``
:mod:`tspd.book.claims.store`          each claim notebook's verdict cell              ``results/claims/<notebook>.json``
:mod:`tspd.book.lookahead`             the Figure 3 and 4 notebooks                    ``results/variants/lookahead-<key>.pt``
:mod:`tspd.measures.regime`            ``python -m tspd regime``                       ``<checkpoint>/regime.json``
:mod:`tspd.measures.dynamics`          ``python -m tspd dynamics``                     ``<checkpoint>/dynamics.json``
:mod:`tspd.measures.ce_audit`          ``python -m tspd ce-audit``                     ``<checkpoint>/ce_audit.json``
:mod:`tspd.measures.cache_agreement`   ``python -m tspd cache-agreement``              ``results/cache_agreement.json``,
                                                                                       ``results/cache_agreement.samples.jsonl``
:mod:`tspd.measures.lmeval_example`    ``python -m tspd lmeval-example``               ``results/lmeval_example.json``
=====================================  ==============================================  =========================================

The last twelve keep their owners elsewhere (each is the one module that reads and writes its files; an
experiment's record lives in its experiment's module, beside what it measures and its tables).
Rows files (``results/runs/``, the controller table's runs, any ``eval --out``) are written through
:class:`tspd.records.rows.ResultsFile`. ``python -m tspd fill-records`` (:mod:`tspd.book.spans`) writes the
pages' tables from these records.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Owner:
    """A record's one owner (tests/test_records.py checks it): only ``module`` holds ``literals`` (its file
    names), and only ``callers`` use its ``writers`` (the command that writes the record)."""
    module: str
    literals: tuple[str, ...]
    writers: tuple[str, ...] = ("save",)
    callers: tuple[str, ...] = ()   # modules (dotted) or scripts (scripts/NAME) that may call a writer


OWNERS = {
    "fresh clone": Owner("tspd.records.fresh_clone", ('"fresh_clone.json"',), callers=("scripts/time_fresh_clone.sh",)),
    "bench loop": Owner("tspd.bench.loop", ('"loop-*.json"', '/ "bench"'), callers=("tspd.commands.bench_loop",)),
    "bench step": Owner("tspd.bench.step", ('/ "gpu"',), callers=("tspd.commands.bench_step",)),
    "bench forward": Owner("tspd.bench.forward", ('/ "forward"',), callers=("tspd.commands.bench_forward",)),
    "train-lm evals": Owner("tspd.records.train_lm_evals", ('"evals.json"',), callers=("tspd.training.lm.evaluation",)),
    "train-lm probes": Owner("tspd.records.train_lm_probes", ('"probes.json"',),
                             callers=("tspd.training.lm.evaluation",)),
    "training page": Owner("tspd.records.training_md", ('"TRAINING.md"',), ("write_page", "append", "write_section"),
                           ("tspd.training.lm.outputs", "tspd.training.train_lm", "tspd.commands.regime")),
    "runs": Owner("tspd.records.runs", ('/ "runs"',), ("write_sidecar", "retire", "move"),
                  ("tspd.eval.experiments", "scripts/switch_book.py")),
    "controller table": Owner("tspd.book.controller_table",   # written by its own make_table
                              ('"embedded_controllers.json"', '"controller_table"')),
    "pareto": Owner("tspd.book.pareto", ('"pareto.json"',), ("write",)),
    "claims": Owner("tspd.book.claims.store", ('/ "claims"',), ("report",)),
    "lookahead": Owner("tspd.book.lookahead", ('"lookahead-',), ("lookahead",)),
    "regime": Owner("tspd.measures.regime", ('"regime.json"',)),   # written by its own measure
    "dynamics": Owner("tspd.measures.dynamics", ('"dynamics.json"',)),   # written by its own measure_checkpoint
    "ce audit": Owner("tspd.measures.ce_audit", ('"ce_audit.json"',)),   # written by its own measure_checkpoint
    "cache agreement": Owner("tspd.measures.cache_agreement",   # written by its own measure
                             ('"cache_agreement.json"', '".samples.jsonl"')),
    "lm-eval example": Owner("tspd.measures.lmeval_example", ('"lmeval_example.json"',),
                             callers=("tspd.commands.lmeval_example",)),
}
