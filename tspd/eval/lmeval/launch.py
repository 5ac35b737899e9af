"""lm-evaluation-harness's own command line with ``--model tspd`` (``python -m tspd.lmeval ARGS``, its options:
:mod:`tspd.commands.lmeval`).

lm-eval 0.4 has no plugin discovery for models: its registry holds its own models and whatever code
already imported registered, so the stock ``lm_eval`` console script cannot see ``tspd``. :func:`lm_eval_cli`
imports the adapter with lm-eval's command line, :func:`with_tasks` puts the package's tasks (``tspd_arith``,
``tspd_chain``, ``tspd_roster``, ``tspd_leaning_shell``, ``tspd_gsm8k``) on the task path when no
``--include_path`` is given, :func:`check_model_args` checks ``--model_args`` before lm-eval indexes its tasks or
any weights load, and
:func:`run` hands every argument to lm-eval (``lm_eval.__main__.cli_evaluate``), so the options, output files
and tables are lm-eval's.
"""
from __future__ import annotations

import sys

from tspd.eval.lmeval import TASKS_DIR
from tspd.validate import UsageError


def lm_eval_cli():
    """lm-eval's command line (``cli_evaluate``), with ``--model tspd`` registered; a one-line UsageError when
    lm-eval is not installed."""
    try:
        from lm_eval.__main__ import cli_evaluate

        import tspd.eval.lmeval.adapter  # noqa: F401  (registers --model tspd)
    except ImportError as e:
        raise UsageError(f"lm-evaluation-harness is not installed ({e}): pip install 'tspd[lmeval]'") from None
    return cli_evaluate


def with_tasks(argv: list[str]) -> list[str]:
    """``argv`` with the package's task folder as ``--include_path``, unless it names one."""
    if any(a == "--include_path" or a.startswith("--include_path=") for a in argv):
        return argv
    return [*argv, "--include_path", str(TASKS_DIR)]


def check_model_args(model: str | None, model_args: list[str] | None, device: str | None, batch_size: str | None) -> None:
    """``--model tspd``: its ``--model_args`` (tokens as given, each ``k=v,k=v``) with ``--device`` /
    ``--batch_size`` checked now, in one line (any other ``--model``: nothing to check)."""
    if model != "tspd":
        return
    from tspd.eval.lmeval.settings import model_args_dict, parse_model_args
    args: dict = {}
    for token in model_args or []:
        args.update(model_args_dict(token))
    batch = batch_size
    if batch is not None:
        try:
            batch = int(batch)
        except ValueError:
            raise UsageError(f"--batch_size {batch!r} is not supported by --model tspd: give a number") from None
    parse_model_args(args, device=device, batch_size=batch)


def run(cli_evaluate, argv: list[str]) -> None:
    """lm-eval's command line on ``argv``, as if started as ``lm_eval ARGV``."""
    saved = sys.argv
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
    finally:
        sys.argv = saved
