"""Every task, one package: the interface (:mod:`tspd.tasks.base`: ``Task``, ``GeneratedTask``), the registry by name
(:mod:`tspd.tasks.registry`: ``get_task``), the benchmarks with their data and graders (``gsm8k``, ``competition_math``,
``humaneval``, ``mbpp``; ``data``, ``grading``, ``code``: programs run in :mod:`tspd.sandbox`) and the tasks this
repository generates (``arith``, ``chain``, ``roster``, ``styled``, ``leaning``, ``trail``: problems, splits, grades),
which ``train-lm`` reads through :mod:`tspd.tasks.generated` without importing any benchmark.
"""
