"""lm-eval resolves ``!function utils.X`` next to the YAML; the functions live in the package.

Importing the adapter registers ``--model tspd``: naming this task by its YAML path
(``lm_eval --model tspd --tasks .../tspd_arith/tspd_arith.yaml``) makes the stock ``lm_eval`` load this file,
and so the adapter, before it looks the model up (``--include_path`` + a task name loads it too late).
"""
import tspd.eval.lmeval.adapter  # noqa: F401
from tspd.eval.lmeval.taskfns import aggregate_tpf, aggregate_tps, arith_dataset, process_arith  # noqa: F401
