"""The tasks this repository generates itself (``arith``, ``chain``, ``roster``, ...): problems, splits and
grades, imported by training (``train-lm``) and by evaluation (:mod:`tspd.eval.tasks` registers them beside
the benchmark loaders); :mod:`tspd.tasks.base` is the task interface every benchmark shares.
"""
