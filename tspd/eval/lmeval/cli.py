"""``python -m tspd.lmeval ARGS``: lm-evaluation-harness's own command line, with ``--model tspd``.

lm-eval 0.4 has no plugin discovery for models: its registry holds its own models and whatever code
already imported registered, so the stock ``lm_eval`` console script cannot see ``tspd``. This command
imports the adapter, puts the package's tasks (``tspd_arith``, ``tspd_chain``, ``tspd_roster``, ``tspd_gsm8k``) on the task
path when no ``--include_path`` is given, checks ``--model_args`` before lm-eval indexes its tasks or any
weights load, and hands every argument to lm-eval (``lm_eval.__main__.cli_evaluate``), so the options, output
files and tables are lm-eval's. Several processes: ``accelerate launch -m tspd.lmeval ...`` or
``torchrun --nproc-per-node N -m tspd.lmeval ...``.

Own options (removed before lm-eval sees the rest): ``--threads N`` (torch's CPU threads),
``--debug`` (a traceback instead of the one-line error), ``--tasks-dir`` (print the task folder, for
``--include_path`` from Python or the stock ``lm_eval``).
"""
from __future__ import annotations

import argparse
import sys

from tspd.eval.lmeval import TASKS_DIR


def _own_options(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--debug", action="store_true")
    p.add_argument("--tasks-dir", action="store_true")
    return p.parse_known_args(argv)


def _precheck(argv: list[str]) -> None:
    """``--model tspd``: its --model_args (with --device / --batch_size) checked now, in one line."""
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    p.add_argument("--model", "-m", default=None)
    p.add_argument("--model_args", "-a", nargs="+", default=None)
    p.add_argument("--device", default=None)
    p.add_argument("--batch_size", "-b", default=None)
    known, _ = p.parse_known_args(argv)
    if known.model != "tspd":
        return
    from tspd.eval.lmeval.settings import model_args_dict, parse_model_args
    from tspd.validate import UsageError
    args: dict = {}
    for token in known.model_args or []:
        args.update(model_args_dict(token))
    batch = known.batch_size
    if batch is not None:
        try:
            batch = int(batch)
        except ValueError:
            raise UsageError(f"--batch_size {batch!r} is not supported by --model tspd: give a number") from None
    parse_model_args(args, device=known.device, batch_size=batch)


def main(argv: list[str] | None = None) -> int:
    own, rest = _own_options(list(sys.argv[1:] if argv is None else argv))
    if own.tasks_dir:
        print(TASKS_DIR)
        return 0
    from tspd.eval.tasks import TaskDataError
    from tspd.validate import UsageError
    try:
        if own.threads is not None:
            if own.threads < 1:
                raise UsageError(f"--threads must be >= 1, got {own.threads}")
            import torch
            torch.set_num_threads(own.threads)
        try:
            from lm_eval.__main__ import cli_evaluate

            import tspd.eval.lmeval.adapter  # noqa: F401  (registers --model tspd)
        except ImportError as e:
            raise UsageError(f"lm-evaluation-harness is not installed ({e}): pip install 'tspd[lmeval]'") from None
        if not any(a == "--include_path" or a.startswith("--include_path=") for a in rest):
            rest += ["--include_path", str(TASKS_DIR)]
        _precheck(rest)
        saved = sys.argv
        sys.argv = ["lm_eval", *rest]
        try:
            cli_evaluate()
        finally:
            sys.argv = saved
    except (ValueError, TaskDataError) as e:   # UsageError, CheckpointError, lm-eval's own argument errors
        if own.debug:
            raise
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
