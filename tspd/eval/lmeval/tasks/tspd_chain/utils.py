"""lm-eval resolves ``!function utils.X`` next to the YAML; the functions live in the package.

Importing the adapter registers ``--model tspd`` (the stock ``lm_eval`` naming this task by its YAML path
loads this file before it looks the model up; see ``tspd_arith/utils.py``).
"""
import tspd.eval.lmeval.adapter  # noqa: F401
from tspd.eval.lmeval.taskfns import chain_dataset, process_chain  # noqa: F401
