"""Does the paper hold here? Each claim of the paper, its 95 % interval and its verdict.

- :mod:`~tspd.book.claims.stats`: bootstrap intervals, verdicts, :class:`Finding` and :class:`Claim`
- :mod:`~tspd.book.claims.runs`: claims about decoding runs (Tables 1, 4-13)
- :mod:`~tspd.book.claims.traces`: claims about decoding traces (Figures 1-4) and their measurements
- :mod:`~tspd.book.claims.store`: each notebook's verdicts kept in ``results/claims/``; the page's rows
- :mod:`~tspd.book.claims.summary`: the status page's claims tables; what the verdicts can mean on a model
"""
from tspd.book.claims import runs, store, traces
from tspd.book.claims.stats import (FAILS, HOLDS, MIN_N, OPEN, Claim, Finding, accuracy_gap, band_verdict,
                                    cluster_bootstrap, compare, mean_ratio, paired_bootstrap, verdict)
from tspd.book.claims.store import NOTEBOOKS, beside, load, load_all, page_rows, report, tally
from tspd.stats import wilson   # the accuracy intervals the claims compare

__all__ = ["FAILS", "HOLDS", "MIN_N", "OPEN", "Claim", "Finding", "accuracy_gap", "band_verdict",
           "cluster_bootstrap", "compare", "mean_ratio", "paired_bootstrap", "verdict", "wilson", "runs", "traces",
           "store", "NOTEBOOKS", "beside", "load", "load_all", "page_rows", "report", "tally"]
