"""lm-eval resolves ``!function utils.X`` next to the YAML; the functions live in the package.

Importing the adapter registers ``--model tspd`` (see ``tspd_arith/utils.py``).
"""
import tspd.eval.lmeval.adapter  # noqa: F401
from tspd.eval.lmeval.taskfns import leaning_shell_dataset, process_leaning_shell  # noqa: F401
