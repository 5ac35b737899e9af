"""lm-evaluation-harness support: the ``tspd`` model adapter and offline task YAMLs.

- :mod:`tspd.eval.lmeval.settings`: ``--model_args`` -> one checked :class:`~tspd.eval.lmeval.settings.ModelArgs`
  (checkpoint, device, the whole :class:`~tspd.decoding.config.DecodeConfig`, chat, likelihood options);
  no lm-eval import, no weights.
- :mod:`tspd.eval.lmeval.adapter`: ``@register_model("tspd")`` (needs ``pip install 'tspd[lmeval]'``):
  ``generate_until`` through :func:`tspd.generate`, ``loglikelihood`` by LLaDA's Monte-Carlo estimate
  (:mod:`tspd.eval.lmeval.likelihood`), NFE / TPS / the decoding in lm-eval's samples and results.
- :mod:`tspd.eval.lmeval.launch`: lm-eval's own command line with the adapter registered and :data:`TASKS_DIR` on
  the task path (lm-eval 0.4 finds models only in code it has imported), run by ``python -m tspd.lmeval ...``
  (:mod:`tspd.commands.lmeval`).
- ``tasks/``: ``tspd_arith``, ``tspd_chain``, ``tspd_roster`` and ``tspd_leaning_shell`` (the generated tasks of
  those names, generated locally) and ``tspd_gsm8k`` (local JSONL).
"""
from __future__ import annotations

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent / "tasks"   # lm-eval --include_path for the tspd_* tasks

__all__ = ["TASKS_DIR"]
