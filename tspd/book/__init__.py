"""The book's side of the package: notebook helpers, the paper's numbers, claims and their verdicts.

- :mod:`tspd.book.notebook`: what every notebook does the same way (re-exported here: ``book.setup``)
- :mod:`tspd.book.reported`: the paper's tables as transcribed from its LaTeX
- :mod:`tspd.book.claims`: each claim of the paper, its interval and verdict
- :mod:`tspd.book.accuracy`: what a checkpoint's own record says of its accuracy (``book.model_note``)
- :mod:`tspd.book.figures`: the paper's (speedup, accuracy) beside ours (``book.paper_vs_ours``)
- :mod:`tspd.book.anchors`: other papers' published speed-accuracy points, as theirs
- :mod:`tspd.book.loop_speed`: the committed ``bench-loop`` results, as the step-speed page shows them
- :mod:`tspd.book.facts`, :mod:`tspd.book.spans`: which table each marked span of the pages holds (each table
  beside its experiment's record), and their one rewriter (``python -m tspd fill-records``)
- :mod:`tspd.book.controller_table`: ``python -m tspd controller-table``, the controller table (book/controllers.md):
  the experiment, its record ``results/embedded_controllers.json`` and its tables
"""
from tspd.book.notebook import (MEASURES, METHODS, RUN_PARAMETERS, agreement, bars, base_run, formatted, lengths,
                                measure, method_config, paper_model, paper_rows, pareto_front, progress_bar, provenance, results_dir,
                                row_label, rows, setup, variants_dir)
from tspd.book.figures import paper_vs_ours
from tspd.book.accuracy import model_note

__all__ = ["METHODS", "method_config", "row_label", "agreement", "paper_model", "paper_rows", "lengths", "base_run", "RUN_PARAMETERS",
           "setup", "results_dir", "variants_dir", "progress_bar", "measure", "rows", "MEASURES", "formatted",
           "provenance", "bars", "pareto_front", "model_note", "paper_vs_ours"]
