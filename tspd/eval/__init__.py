"""Evaluation: the harness and the registry of stored runs (the tasks, their graders and the sandbox they run
code in: :mod:`tspd.tasks`, :mod:`tspd.sandbox`).

- :mod:`tspd.eval.harness`: ``python -m tspd eval``, the one evaluation loop (resumable rows)
- :mod:`tspd.eval.completions`: ``python -m tspd grade``, completions made elsewhere graded against a task
- :mod:`tspd.eval.results`: the rows file, its summary and throughput (paper Appendix A.1)
- :mod:`tspd.eval.shard`: splitting a run over torchrun / accelerate processes
- :mod:`tspd.eval.experiments`: ``RunConfig`` and the run registry the notebooks share
"""
