"""Train an embedded diffusion LM on a generated task (``arith``, ``chain``): ``python -m tspd train-lm``
(:mod:`tspd.commands.train_lm`).

The loop, read top to bottom: build the model (``--arch``: LLaDA's, Dream's or LLaDA-MoE's layout,
:mod:`tspd.training.lm.arch`; fresh, warm-started or resumed), then for each step set the learning rate, take
a batch, compute LLaDA's SFT loss (Sec. 2.3 / Eq. 5; :mod:`tspd.training.lm.objective`; plus the router's
load-balancing term for the MoE), step the optimiser, log; every ``--eval-minutes`` a point of the learning curve
(:mod:`tspd.training.lm.evaluation`); every ``--save-minutes`` the checkpoint and the resumable state
(:mod:`tspd.training.lm.outputs`). Then the final sweep and probes. The parts live in :mod:`tspd.training.lm`.

``--resume`` continues an interrupted run from its last saved state (``train_state.pt``: fp32 weights,
optimiser, step, elapsed time, learning curve) on the same data stream and schedule. Evaluation time does
not count against ``--minutes``. bf16 autocast on CUDA, fp32 on the CPU, optional ``torch.compile``.

Outputs in ``--out``: ``config.json`` + ``model.safetensors`` (bf16, rewritten every few minutes so an
interrupted run leaves a valid checkpoint), the tokenizer, ``train_log.csv``, ``eval_log.csv`` and
``TRAINING.md`` (command, revision, device, wall time, loss, learning curve, probes, regime figures, and the
held-out accuracy of 1 token per step against parallel decoding).
"""
from __future__ import annotations

import contextlib
import csv
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tspd.measures.regime import REGIME_COLUMNS
from tspd.tasks.generated import generated_task
from tspd.models.loading import LoadedModel, special_tokens
from tspd.provenance import device_name, git_revision
from tspd.records import training_md
from tspd.training.lm.config import LMTrainConfig, command_line
from tspd.training.lm.data import make_tokenizer
from tspd.training.lm.stream import BatchStream
from tspd.training.lm.evaluation import EVAL_COLUMNS, curve_point, final_evaluation, final_probes, gate_failed, \
    task_probes
from tspd.training.lm.arch import RouterBalance, build
from tspd.training.lm.cached_view import cached_view_loss
from tspd.training.lm.objective import ar_loss, count_parameters, lr_factor, make_optimizer, sft_loss
from tspd.records.files import read_log
from tspd.training.lm.outputs import STATE, probe_table, save_checkpoint, save_state, sweep_table, upgrade_eval_log, \
    write_training_md
from tspd.training.masking import Masking
from tspd.training.warm_start import warm_start


def train(cfg: LMTrainConfig, log=print) -> dict:
    """Train, checkpoint every ``save_minutes``, save, then evaluate; returns the TRAINING.md record."""
    if cfg.minutes is None and cfg.max_steps is None:
        raise ValueError("give --minutes or --max-steps")
    if cfg.resume and not (Path(cfg.out) / STATE).is_file():
        raise ValueError(f"--resume: no {STATE} in {cfg.out} (start the run without --resume)")
    if cfg.init_layers and not cfg.init_from:
        raise ValueError("--init-layers needs --init-from (the checkpoint whose blocks it names)")
    task = generated_task(cfg.task)
    for option, value, needs in (("--alter-frac", cfg.alter_frac, "altered"), ("--swap-frac", cfg.swap_frac, "reordered")):
        if value and not hasattr(task, needs):
            raise ValueError(f"{option}: the {cfg.task} task has no {needs} problems (its solutions vary already)")
    with torch_settings(cfg):
        return _train(cfg, log)


@contextlib.contextmanager
def torch_settings(cfg: LMTrainConfig):
    """The run's thread count (``--threads``) and, on CUDA, tf32 matmuls; torch's own settings restored after."""
    saved = torch.get_num_threads(), torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    if cfg.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.set_num_threads(saved[0])
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[1:]


@dataclass
class Run:
    """One training run's moving parts: the network (and the LoadedModel evaluations decode through), the
    optimiser, the masking noise's generator and the record (``info``: counters, curve, recent losses)."""
    net: torch.nn.Module    # the --arch network (tspd.training.lm.arch)
    model: LoadedModel
    opt: torch.optim.Optimizer
    gen: torch.Generator
    balance: RouterBalance  # the MoE router's load-balancing term (0 without experts)
    info: dict = field(default_factory=dict)

    @property
    def step(self) -> int:
        return self.info["step"]


def start(cfg: LMTrainConfig, out: Path, log) -> Run:
    """A fresh (or warm-started) run, or the interrupted one from ``train_state.pt`` with ``--resume``."""
    device = torch.device(cfg.device)
    tokenizer = make_tokenizer(cfg, out)
    torch.manual_seed(cfg.seed)
    net = build(cfg, tokenizer)
    if cfg.init_from and not cfg.resume:
        chosen = warm_start(net, cfg.init_from, cfg.init_layers, tokenizer)
        log(f"warm start from {cfg.init_from}: embeddings, head and blocks {chosen}")
    net.to(device).train()
    model = LoadedModel(net, tokenizer, special_tokens(net.config, tokenizer), out)   # what evaluations decode
    params = count_parameters(net)
    log(f"model: {params:,} parameters; device {device_name(device)}; torch {torch.__version__}")
    run = Run(net, model, make_optimizer(net, cfg, fused=device.type == "cuda"),
              torch.Generator(device=device).manual_seed(cfg.seed), RouterBalance(net))
    run.info = {"status": "in progress", "command": command_line(cfg), "git": git_revision() or "unknown",
                "device": device_name(device), "params": params, "step": 0, "batch_size": cfg.batch_size,
                "tokens": 0, "train_seconds": 0.0, "tokens_per_s": 0.0, "loss": float("nan"), "loss_window": 0,
                "task": cfg.task, "arch": cfg.arch, "objective": cfg.objective, "gen_length": cfg.gen_length,
                "block_length": cfg.block_length, "evals": [], "curve": [], "recent": [], "resumes": 0}
    if cfg.resume:
        state = torch.load(out / STATE, map_location=device, weights_only=False)
        net.load_state_dict(state["model"])
        run.opt.load_state_dict(state["opt"])
        if state["gen"].numel() == run.gen.get_state().numel():
            run.gen.set_state(state["gen"].cpu())   # RNG states are CPU byte tensors
        else:   # saved on another kind of device: the masking noise goes on from a seed of its own
            run.gen.manual_seed(cfg.seed + state["info"]["step"])
            log(f"the masking noise's generator was saved on another device: reseeded at step {state['info']['step']}")
        torch.set_rng_state(state["torch_rng"].cpu())
        info = run.info
        info.update({k: state["info"][k] for k in ("step", "tokens", "train_seconds", "curve", "recent", "resumes")})
        info.update(command=state["info"]["command"], resumes=info["resumes"] + 1, resumed_by=command_line(cfg),
                    git=f"{state['info']['git'].split(', resumed at')[0]}, resumed at {git_revision() or 'unknown'}")
        log(f"resumed at step {info['step']} ({info['train_seconds'] / 60:.1f} min of training)")
    return run


class Logs:
    """``train_log.csv`` (a row per logged step) and ``eval_log.csv`` (a row per curve point), appended to on
    a resume."""

    def __init__(self, out: Path, resume: bool):
        if resume:
            upgrade_eval_log(out / "eval_log.csv")
        mode = "a" if resume else "w"
        self.train_file = (out / "train_log.csv").open(mode, newline="")
        self.eval_file = (out / "eval_log.csv").open(mode, newline="")
        self.train, self.eval = csv.writer(self.train_file), csv.writer(self.eval_file)
        if not resume:
            self.train.writerow(["step", "minutes", "lr", "loss", "positions_per_s"])
            self.eval.writerow(EVAL_COLUMNS)

    def step(self, step: int, minutes: float, lr: float, loss: float, rate: float) -> None:
        self.train.writerow([step, round(minutes, 3), f"{lr:.3e}", f"{loss:.4f}", round(rate)])
        self.train_file.flush()

    def point(self, point: dict) -> None:
        self.eval.writerow([point[k] if point[k] is not None else "" for k in EVAL_COLUMNS])
        self.eval_file.flush()

    def close(self) -> None:
        self.train_file.close()
        self.eval_file.close()


def _loss(cfg: LMTrainConfig, run, step_fn, batch, masking: Masking) -> torch.Tensor:
    """The step's loss: next-token (``--objective ar``), LLaDA's Eq. 5, or with odds ``--cache-mix`` Eq. 5 on one
    block as the caches show it (the uncompiled network: its cache is a Python object)."""
    if cfg.objective == "ar":
        return ar_loss(step_fn, batch)
    special = run.model.special
    if cfg.cache_mix and float(torch.rand(1, generator=run.gen, device=run.gen.device)) < cfg.cache_mix:
        return cached_view_loss(run.net, batch, special.mask, special.eos, cfg.block_length, cfg.eps, run.gen)
    return sft_loss(step_fn, batch, special.mask, cfg.eps, run.gen, masking, special.eos)


def _train(cfg: LMTrainConfig, log) -> dict:
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    run = start(cfg, out, log)
    net, info, recent = run.net, run.info, run.info["recent"]
    device = next(net.parameters()).device
    masking = Masking(cfg.masking, cfg.mask_mix, cfg.block_length)
    # fixed windows give few shapes: compile each once rather than a slower dynamic-shape graph
    step_fn = torch.compile(net, dynamic=False if cfg.long_windows or cfg.mix_tasks else None) if cfg.compile else net
    stream, logs = BatchStream(run.model.tokenizer, cfg, skip_batches=run.step), Logs(out, cfg.resume)
    t_start = time.time() - info["train_seconds"]     # training time so far (evaluations excluded)
    last_save = last_log = time.time()
    last_eval = info["curve"][-1]["minutes"] * 60 if info["curve"] else 0.0
    step, tokens = info["step"], info["tokens"]
    pending: list[torch.Tensor] = []                  # this run's losses not yet read from the device
    tokens_at_log = tokens
    try:
        while (progress := _progress(cfg, step, time.time() - t_start)) < 1.0:
            lr = cfg.lr * lr_factor(progress, cfg.warmup_frac, cfg.min_lr_frac)
            for g in run.opt.param_groups:
                g["lr"] = lr
            batch = next(stream).to(device)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
                loss = _loss(cfg, run, step_fn, batch, masking)
            run.opt.zero_grad(set_to_none=True)
            (loss + cfg.router_aux * run.balance.take()).backward()   # the record's loss is the SFT loss alone
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            run.opt.step()
            step, tokens = step + 1, tokens + batch.input_ids.numel()
            pending.append(loss.detach())     # read at the next log line: no wait for the device every step

            now = time.time()
            if step % cfg.log_every == 0 or step == 1 or now - last_log > 60:
                _flush(pending, recent)
                rate = (tokens - tokens_at_log) / max(now - last_log, 1e-9)
                mean = sum(recent[-cfg.log_every:]) / len(recent[-cfg.log_every:])
                log(f"step {step:6d} | {(now - t_start) / 60:6.2f} min | lr {lr:.2e} | loss {mean:.4f} | "
                    f"{rate:,.0f} positions/s")
                logs.step(step, (now - t_start) / 60, lr, recent[-1], rate)
                last_log, tokens_at_log = now, tokens
            if (cfg.eval_every and step % cfg.eval_every == 0) or \
                    (cfg.eval_minutes and now - t_start - last_eval >= 60 * cfg.eval_minutes):
                last_eval = now - t_start
                _flush(pending, recent)
                point = curve_point(run.model, cfg, step, last_eval / 60, sum(recent[-50:]) / len(recent[-50:]))
                info["curve"].append(point)
                logs.point(point)
                _log_point(cfg, step, point, log)
                t_start += time.time() - now   # evaluation time does not count against --minutes
                if failed := gate_failed(cfg, point):
                    log(f"stopping: {failed}")
                    info["stopped_early"] = failed
                    break
            if time.time() - last_save > 60 * cfg.save_minutes:
                _flush(pending, recent)
                _save(run, out, step, tokens, time.time() - t_start)
                last_save = time.time()
    finally:
        stream.close()
        logs.close()
    _flush(pending, recent)
    _save(run, out, step, tokens, time.time() - t_start)
    log(f"trained {step} steps in {info['train_seconds'] / 60:.1f} min; final loss {info['loss']:.4f}; saved to {out}")
    return _final_record(cfg, out, info, log)


def _final_record(cfg: LMTrainConfig, out: Path, info: dict, log) -> dict:
    """After training: the held-out sweep and the probes of the saved checkpoint, recorded in ``info``,
    TRAINING.md (also while they run) and ``evals.json``; returns ``info``."""
    info["status"] = "finished training; evaluating"
    write_training_md(out, info)
    info["evals"] = final_evaluation(out, cfg, log)
    info["probes"] = final_probes(out, cfg)
    info["status"] = "finished"
    write_training_md(out, info)
    return info


def _flush(pending: list[torch.Tensor], recent: list[float]) -> None:
    """Move the losses still on the device into ``recent`` (the last 100 kept), in one read."""
    if pending:
        recent.extend(torch.stack(pending).tolist())
        pending.clear()
        del recent[:-100]


def _progress(cfg: LMTrainConfig, step: int, seconds: float) -> float:
    """How far the run is, 0 to 1: by steps, by training minutes, whichever is further."""
    return max(step / cfg.max_steps if cfg.max_steps else 0.0, seconds / (60 * cfg.minutes) if cfg.minutes else 0.0)


def _log_point(cfg: LMTrainConfig, step: int, point: dict, log) -> None:
    log(f"step {step:6d} | eval 1 token/step: {point['accuracy']:.1%} of {point['n']} | probes " +
        ", ".join(f"{k.removeprefix('probe_')} {point[k]:.0%}" for k in task_probes(generated_task(cfg.task)).COLUMNS
                  if not k.endswith("_n") and point[k] is not None))
    if cfg.regime:
        log(f"step {step:6d} | regime " + ", ".join(f"{k} {point[k]:.2f}" for k in REGIME_COLUMNS
                                                    if point[k] is not None))


def _save(run: Run, out: Path, step: int, tokens: int, seconds: float) -> None:
    """The checkpoint, the resumable state and TRAINING.md, with the counters as of now."""
    save_checkpoint(run.net, out)
    recent = run.info["recent"]
    window = recent[-50:]
    run.info.update(step=step, tokens=tokens, train_seconds=seconds, tokens_per_s=tokens / max(seconds, 1e-9),
                    loss=sum(window) / max(len(window), 1), loss_window=len(window))
    save_state(out, run.net, run.opt, run.info, run.gen)
    write_training_md(out, run.info)


def eval_only(cfg: LMTrainConfig, log=print) -> list[dict]:
    """Score an existing checkpoint and append the table to its TRAINING.md (and ``evals.json``)."""
    out = Path(cfg.out)
    with torch_settings(cfg):
        evals = final_evaluation(out, cfg, log)
        probed = final_probes(out, cfg)
    training_md.append(out, f"\n## Re-evaluation ({time.strftime('%Y-%m-%d %H:%M')}, git {git_revision() or 'unknown'}, "
                       f"{device_name(torch.device(cfg.device))})\n\n" + "\n".join(sweep_table(evals)) + "\n"
                       + ("\n" + "\n".join(probe_table(probed, cfg.task)) if probed else ""))
    return evals


__all__ = ["LMTrainConfig", "command_line", "read_log", "train", "eval_only"]
