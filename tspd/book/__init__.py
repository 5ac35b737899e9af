"""The book's side of the package: notebook helpers, the paper's numbers, claims and their verdicts.

- :mod:`tspd.book.notebook`: what every notebook does the same way (re-exported here: ``book.setup``)
- :mod:`tspd.book.reported`: the paper's tables as transcribed from its LaTeX
- :mod:`tspd.book.claims`: each claim of the paper, its interval and verdict
- :mod:`tspd.book.record`: what a checkpoint's own record says of its accuracy (``book.model_note``)
"""
from tspd.book.notebook import (METHODS, agreement, bars, base_run, lengths, measure, method_config,  # noqa: F401
                                paper_rows, row_label, pareto_front, progress_bar, provenance,
                                results_dir, rows, setup, variants_dir)
from tspd.book.notebook import __all__ as _notebook
from tspd.book.record import model_note  # noqa: F401

__all__ = [*_notebook, "model_note"]
