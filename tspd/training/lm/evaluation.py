"""What ``train-lm`` measures: the learning curve's points and the final sweep, through :func:`tspd.generate`.

Each point of the learning curve (``--eval-minutes``) has the held-out accuracy with 1 token per step, the
teacher-forced probes (:mod:`tspd.training.probes`: what the model has learned before the accuracy moves)
and, with ``--regime``, the regime figures (:mod:`tspd.measures.regime`). The final evaluation reloads the
saved checkpoint and decodes with every setting of :data:`SWEEP` (Sec. 1: committing several tokens per
step loses accuracy), resumably.
"""
from __future__ import annotations

import time
from pathlib import Path

import torch

from tspd.measures.regime import REGIME_COLUMNS, RegimeConfig, regime_figures, headline
from tspd.tasks import arith
from tspd.tasks.generated import generated_task
from tspd.training import probes, roster_probes, serial_probes
from tspd.records import train_lm_evals, train_lm_probes
from tspd.training.lm.config import LMTrainConfig

# The final evaluation: 1 token per step, then what parallel decoding costs (Sec. 1: committing several
# tokens per step loses accuracy). (controller, threshold, tokens per step).
SWEEP = [("vanilla", None, 1)] + [("fast-dllm", t, None) for t in (0.95, 0.9, 0.8, 0.7, 0.5)] + \
        [("vanilla", None, k) for k in (2, 4, 8)]


# eval_log.csv: every task's probe columns (empty where a task has none), roster's last, so a log's existing columns keep their places
EVAL_COLUMNS = ("step", "minutes", "loss", "accuracy", "n", *probes.COLUMNS, *REGIME_COLUMNS, *roster_probes.COLUMNS,
                *serial_probes.COLUMNS)


def task_probes(task):
    """The teacher-forced probes of ``task``'s answers: roster's own for the tasks with its day lines (roster,
    styled), the steps chained in one forward for the serial tasks (trail, shell), arith's for the arithmetic ones."""
    if task in serial_probes.SERIAL:
        return probes.TaskProbes(serial_probes, task)
    return probes.TaskProbes(roster_probes, task) if hasattr(task, "LINE") else probes


@torch.no_grad()
def sweep_row(model, problems: list[dict], gen_length: int = 128, block_length: int = 32,
             steps: int | None = None, controller: str = "vanilla", threshold: float | None = None,
             batch: int = 500, task=arith) -> dict:
    """Final-answer accuracy of ``model`` (with ``.tokenizer``/``.special``) on ``problems`` of ``task``."""
    from tspd.decoding.config import DecodeConfig
    from tspd.measures.regime import score

    steps = gen_length if steps is None else steps
    decode = DecodeConfig.of(controller=controller, threshold=threshold, gen_length=gen_length, block_length=block_length,
                             steps=steps)
    r = score(model, task, problems, decode, batch)
    return {"policy": controller, "threshold": threshold, "steps": steps, "n": r["n"], "correct": r["correct"],
            "accuracy": r["accuracy"] if r["n"] else 0.0, "nfe": r["nfe"], "tpf": r["tpf"],
            "lines": task.line_accuracy(problems, r["texts"]), "templates": task.template_accuracy(problems, r["texts"])}


def final_evaluation(out: Path, cfg: LMTrainConfig, log) -> list[dict]:
    """Reload the saved checkpoint and score it with every decoding of :data:`SWEEP`.

    Each row is written to ``evals.json`` as soon as it is measured, with the checkpoint's hash; an
    interrupted sweep rerun on the same checkpoint (``--eval-only``) keeps those rows and measures
    only the rest.
    """
    from tspd.models.loading import load_model, weights_hash

    if cfg.final_eval_n <= 0:
        train_lm_evals.save(out, [])   # none, for these weights (an earlier run's rows would not be theirs)
        return []
    model = load_model(out, device=cfg.device)
    task = generated_task(cfg.task)
    problems = task.load_split("test", min(cfg.final_eval_n, task.SPLIT_SIZES["test"]))
    weights = weights_hash(out)
    before = train_lm_evals.load_rows(out)
    done = {(r["policy"], r["threshold"], r.get("tokens_per_step"), r["n"]): r for r in before
            if r.get("weights") == weights and "accuracy" in r}
    results = []
    for controller, threshold, per_step in SWEEP:
        if (controller, threshold, per_step, len(problems)) in done:
            results.append(done[controller, threshold, per_step, len(problems)])
            continue
        t0 = time.time()
        steps = cfg.gen_length // per_step if per_step else cfg.gen_length
        try:
            r = sweep_row(model, problems, cfg.gen_length, cfg.block_length, steps, controller,
                         threshold, cfg.eval_batch, task)
        except Exception as e:   # a decoding controller that is missing or broken must not lose the checkpoint
            r = {"policy": controller, "threshold": threshold, "n": len(problems), "error": f"{type(e).__name__}: {e}"}
        r["tokens_per_step"] = per_step
        r["seconds"] = round(time.time() - t0, 1)
        r["weights"] = weights
        log(f"eval {controller} threshold={threshold} tokens/step={per_step}: " +
            (f"{r['accuracy']:.1%} of {r['n']} (nfe {r['nfe']}, {r['seconds']} s)" if "accuracy" in r else r["error"]))
        results.append(r)
        train_lm_evals.save(out, results)
    return results


def final_probes(out: Path, cfg: LMTrainConfig) -> dict | None:
    """The probes of the saved checkpoint on the final evaluation's problems, also written to ``probes.json``."""
    from tspd.models.loading import load_model

    if cfg.final_eval_n <= 0:
        return None
    model = load_model(out, device=cfg.device)
    task = generated_task(cfg.task)
    problems = task.load_split("test", min(cfg.final_eval_n, task.SPLIT_SIZES["test"]))
    probed = {"n": len(problems), **task_probes(task).run_probes(model, model.tokenizer, problems, cfg.gen_length,
                                                                 mask_id=model.special.mask)}
    train_lm_probes.save(out, probed)
    return probed


def curve_point(model, cfg: LMTrainConfig, step: int, minutes: float, loss: float) -> dict:
    """One point of the learning curve: held-out accuracy (1 token per step) and the probes.

    The probes (:mod:`tspd.training.probes`) say what the model has learned before the accuracy moves:
    copying question numbers, reading its own earlier results, each operation, the final line.
    """
    task = generated_task(cfg.task)
    problems = task.load_split("test", cfg.eval_n)
    was_training = model.training
    model.eval()
    figures, rows = dict.fromkeys(REGIME_COLUMNS), None
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cfg.device == "cuda"):
        if cfg.regime:
            rc = RegimeConfig(n=cfg.eval_n, long_n=cfg.regime_long_n,
                              long_windows=None if cfg.regime_long_n else (),   # None: twice the window
                              vanilla_caches=False, batch=cfg.eval_batch)   # what the caches cost Fast-dLLM
            rows = regime_figures(model, task, problems, cfg.gen_length, cfg.block_length, rc)
            r, figures = rows["vanilla"], headline(rows, rc, cfg.gen_length, cfg.block_length)
        else:
            r = sweep_row(model, problems, cfg.gen_length, cfg.block_length, batch=cfg.eval_batch, task=task)
        probed = task_probes(task).run_probes(model, model.tokenizer, problems, cfg.gen_length,
                                              mask_id=model.special.mask)
    model.train(was_training)
    return {**dict.fromkeys(EVAL_COLUMNS), "step": step, "minutes": round(minutes, 4), "loss": round(loss, 4),
            "accuracy": r["accuracy"], "n": r["n"], **probed, **figures, "regime": rows}


def gate_failed(cfg: LMTrainConfig, point: dict) -> str | None:
    """Why a run stops early (it has not learned to copy question numbers by ``--gate-minutes``), or None."""
    copy = point.get("probe_operand_question")
    if cfg.gate_minutes and point["minutes"] >= cfg.gate_minutes and copy is not None and copy < cfg.gate_copy:
        return (f"after {point['minutes']:.0f} min the model copies {copy:.0%} of question numbers "
                f"(--gate-copy {cfg.gate_copy:.0%} by --gate-minutes {cfg.gate_minutes:g})")
    return None
