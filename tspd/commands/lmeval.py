"""``python -m tspd.lmeval ARGS``: lm-evaluation-harness's own command line, with ``--model tspd``.

Not a ``python -m tspd`` command: every argument but its own goes to lm-eval untouched, so it has its own entry
point (``tspd/lmeval.py``, for ``python -m tspd.lmeval``, ``accelerate launch -m tspd.lmeval ...`` and
``torchrun --nproc-per-node N -m tspd.lmeval ...``); what it does with the rest: :mod:`tspd.eval.lmeval.launch`.

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
    from tspd.eval.lmeval.launch import check_model_args
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    p.add_argument("--model", "-m", default=None)
    p.add_argument("--model_args", "-a", nargs="+", default=None)
    p.add_argument("--device", default=None)
    p.add_argument("--batch_size", "-b", default=None)
    known, _ = p.parse_known_args(argv)
    check_model_args(known.model, known.model_args, known.device, known.batch_size)


def main(argv: list[str] | None = None) -> int:
    own, rest = _own_options(list(sys.argv[1:] if argv is None else argv))
    if own.tasks_dir:
        print(TASKS_DIR)
        return 0
    from tspd.eval.lmeval.launch import lm_eval_cli, run, with_tasks
    from tspd.tasks.registry import TaskDataError
    from tspd.validate import UsageError
    try:
        if own.threads is not None:
            if own.threads < 1:
                raise UsageError(f"--threads must be >= 1, got {own.threads}")
            import torch
            torch.set_num_threads(own.threads)
        cli_evaluate = lm_eval_cli()
        rest = with_tasks(rest)
        _precheck(rest)
        run(cli_evaluate, rest)
    except (ValueError, TaskDataError) as e:   # UsageError, CheckpointError, lm-eval's own argument errors
        if own.debug:
            raise
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
