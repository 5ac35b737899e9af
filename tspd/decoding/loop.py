"""The one generation loop: block-wise semi-autoregressive masked denoising (paper Algorithm 1).

    X = [prompt | MASK * gen_length]                               canvas      (tspd.decoding.canvas)
    for each block of ``block_length`` positions, left to right:
        repeat until the block has no MASK (or, for LLaDA's fixed schedule, steps_per_block times):
            p       = model(window of X)           one forward = one NFE;      (tspd.decoding.window)
                                                   the whole canvas, or with a KV cache the block (dual)
                                                   or block + suffix (prefix) after a full forward
            H       = update(H, p)                 confidence, entropy, margin, EWMA   (.features, .history):
                                                   only what the controller, CE and recorder read (.reads)
            conf~   = CE(H, F)                     optional Confidence Extrapolation (Section 3.3)
            A       = controller(view of block)    vanilla, fast-dllm, ..., tspd      (.controllers)
            X[A]    = candidate tokens             only masked positions of this block, never undone

Controllers (:mod:`tspd.decoding.controllers`), the extrapolator (:mod:`tspd.decoding.extrapolate`) and the cache
mode are the pluggable pieces; nothing here is specific to one of them. The paper's ``remask`` line
has no counterpart: a committed token is never masked again.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import torch

from tspd.decoding.canvas import Canvas, prepare_canvas
from tspd.decoding.clock import PhaseClock
from tspd.decoding.config import DecodeConfig
from tspd.decoding.controllers import Controller, Decision, StepView, make_controller, top_one
from tspd.decoding.extrapolate import CEConfig, ConfidenceExtrapolator
from tspd.decoding.history import History
from tspd.decoding.reads import StepPlan
from tspd.decoding.recorder import Trace, TraceRecorder
from tspd.decoding.schedule import NO_SCHEDULE, BlockSchedule
from tspd.decoding.window import WindowForward
from tspd.models.loading import LoadedModel


@dataclass
class Generation:
    token_ids: torch.Tensor            # [B, gen_length] generated region
    texts: list[str]                   # decoded, cut at the first EOS/EoT (empty without a tokenizer)
    nfe: int                           # forwards run for the whole batch
    nfe_per_sample: list[int]          # forwards during which each row still had masks to fill
    seconds: float                     # wall time of the call
    prompt_length: int                 # width of the (left-padded) prompt
    trace: Trace | None = None
    steps_per_block: list[list[int]] = field(default_factory=list)  # [B][num_blocks] forwards used
    forward_seconds: float | None = None   # with profile=True: time in model forwards ...
    control_seconds: float | None = None   # ... and in statistics + CE + controller + commit, of which
    controller_seconds: float | None = None   # the controller's decide() (paper Section 5.4) ...
    ce_seconds: float | None = None        # ... and Confidence Extrapolation's update()
    truncated: list[bool] = field(default_factory=list)   # per prompt: left-truncated to fit (truncate_prompt)
    answer_tokens: list[int] = field(default_factory=list)  # per row: generated tokens other than EOS/EoT, pad, mask

    @property
    def tokens_per_forward(self) -> float | None:
        """TPF, the field's measure of parallelism (d3LLM leaderboard): generated tokens that are not EOS/EoT
        over the forwards that wrote them, each row counted by its own forwards (``nfe_per_sample``)."""
        forwards = sum(self.nfe_per_sample)
        return sum(self.answer_tokens) / forwards if forwards and self.answer_tokens else None

    @property
    def truncated_prompts(self) -> int:
        return sum(self.truncated)

    @property
    def control_overhead(self) -> float | None:
        """Controller + CE time per step as a fraction of one model forward (paper Section 5.4)."""
        if self.forward_seconds is None or not self.forward_seconds:
            return None
        return self.control_seconds / self.forward_seconds

    @property
    def tokens_per_second(self) -> float:
        """The paper's TPS (Appendix A.1): B * L_gen / T_wall."""
        return self.token_ids.numel() / max(self.seconds, 1e-12)


def decode_texts(tokenizer, token_ids: torch.Tensor | list[list[int]], stop_ids: list[int]) -> list[str]:
    """Decode each row (a tensor's or lists of ids) up to its first stop id (EOS / EoT), skipping special tokens."""
    if tokenizer is None:
        return []
    out = []
    for row in (token_ids.tolist() if isinstance(token_ids, torch.Tensor) else token_ids):
        cut = next((i for i, t in enumerate(row) if t in stop_ids), len(row))
        out.append(tokenizer.decode(row[:cut], skip_special_tokens=True))
    return out


class StepCounts:
    """Forwards run: by the batch (NFE), by each row while it still had masks, by each row in each block.

    A step only keeps its block's mask; which rows still had masks is counted once, after the last step.
    """

    def __init__(self, batch: int, num_blocks: int, device):
        self.nfe, self.shape, self.device = 0, (num_blocks, batch), device
        self.masked: list[torch.Tensor] = []
        self.block: list[int] = []

    def step(self, block: int, masked: torch.Tensor) -> None:
        """A forward for ``block`` whose positions ``masked`` [B, Lb] were still masked before it."""
        self.nfe += 1
        self.masked.append(masked)
        self.block.append(block)

    def blocks(self) -> list[list[int]]:
        """[B][num_blocks] forwards each row was active in (had masks left in the block), per block: counted
        on the host from one copy of every step's [B] activity (a few operations per call, not per step)."""
        num_blocks, batch = self.shape
        out = [[0] * num_blocks for _ in range(batch)]
        if self.masked:
            for block, active in zip(self.block, torch.stack(self.masked).any(-1).tolist()):
                for row, a in zip(out, active):
                    row[block] += a
        return out


@torch.no_grad()
def generate(model: LoadedModel, prompts, config: DecodeConfig | None = None, *, controller: "Controller | str | None" = None,
             tokenizer=None, record_trace: bool = False, add_special_tokens: bool = False, profile: bool = False,
             truncate_prompt: bool = False, **overrides) -> Generation:
    """Decode ``prompts`` with a masked diffusion LM, block by block (paper Algorithm 1).

    ``model`` is a :class:`~tspd.models.loading.LoadedModel` (``tspd.load_model``); ``prompts`` are strings
    (tokenized with ``tokenizer`` or the model's), id lists or a [B, P] id tensor, left-padded into one batch.
    ``config`` is the decoding (:class:`DecodeConfig`; None: vanilla LLaDA, one token per step over the
    checkpoint's own window) and ``overrides`` change its fields for this call (``cache="dual"``,
    ``threshold=0.9``). ``controller``: a controller's name (the config's field, ``controller="fast-dllm"``),
    or a ready :class:`Controller` in place of the config's (one built in memory, or wrapped to record what it
    sees). ``record_trace`` returns per-step traces (:class:`Trace`); ``profile`` splits the wall time by phase (it synchronises the device: leave it off
    to measure throughput); ``truncate_prompt`` keeps the last tokens of a prompt too long for the model
    instead of refusing it. Bad arguments raise :class:`tspd.validate.UsageError` before any decoding.
    """
    if isinstance(controller, str):                            # a name is the config's field; an object replaces it
        controller, overrides = None, {**overrides, "controller": controller}
    cfg = DecodeConfig.of(config, **overrides).resolved(_loaded(model))
    L, Lb, n_blocks, spb = cfg.gen_length, cfg.block_length, cfg.num_blocks, cfg.steps // cfg.num_blocks
    conf_dtype, special, device = getattr(torch, cfg.confidence_dtype), model.special, model.device
    controller = controller or make_controller(cfg.controller, **cfg.controller_kwargs)
    extrapolator = ConfidenceExtrapolator(CEConfig(**cfg.ce_kwargs)) if cfg.ce else None   # Section 3.3, or none
    generator = torch.Generator(device).manual_seed(cfg.seed) if cfg.seed is not None and cfg.temperature > 0 else None
    t0, clock = time.perf_counter(), PhaseClock(device, enabled=profile)
    canvas = prepare_canvas(model, prompts, L, tokenizer=tokenizer, add_special_tokens=add_special_tokens,
                            truncate_prompt=truncate_prompt)                         # X <- [x | MASK^L]
    B, P = canvas.x.shape[0], canvas.prompt_length
    controller.bind(model)                                     # a fresh batch: the controller and CE start empty
    controller.reset(B, L, Lb, device)
    if extrapolator is not None:
        extrapolator.reset(B, L, device)
    recorder = TraceRecorder(B, L, device) if record_trace else None
    plan = StepPlan.of(controller.reads, extrapolator.reads if extrapolator else (), recorder.reads if recorder else (),
                       cfg.temperature)                        # what each step computes: what is read
    forward = WindowForward(model, canvas, cfg.cache, cfg.fast, plan.reads_beyond_block(record_trace))
    history, counts = History(B, L, Lb, special.mask, device, plan.view), StepCounts(B, n_blocks, device)

    for b in range(n_blocks):                                  # semi-autoregressive blocks, left to right
        s, e = canvas.block(b, Lb)                             # the block: canvas [s, e), generated [gs, gs + Lb)
        gs, block = s - P, canvas.x[:, s:e]                    # (a view of the canvas: commits write through it)
        schedule = BlockSchedule((block == special.mask).sum(-1), spb) if "quota" in plan.view else None
        controller.start_block(b)
        left, idle = None, 0                                   # masks left, forwards without a commit
        fixed = dict(total_steps=cfg.steps, block=b, num_blocks=n_blocks, block_start=gs, steps_per_block=spb,
                     eos_id=special.eos, mask_id=special.mask, **history.around(gs))   # the block's view fields
        for i in itertools.count():                            # until the block has no MASK (if sum F = L: break)
            masked = block == special.mask
            if controller.fixed_schedule:                      # LLaDA's fixed schedule: steps_per_block forwards
                if i >= spb:
                    break
            else:                                              # counting the masks left is the step's one wait
                now = int(masked.sum())                        # for the device
                if now == 0:
                    break
                idle, left = (idle + 1 if left is not None and now >= left else 0), now
                if idle > Lb:                                  # never loop forever on a controller that waits
                    raise RuntimeError(f"controller {controller.name!r} committed nothing in {idle} forwards of block "
                                       f"{b} ({now} masked positions left): a controller that sets force_progress = "
                                       "False must commit within block_length + 1 forwards")
            w0, w1, g0, g1 = forward.window(s, e, first=i == 0)
            clock.start()
            logits = forward(w0, w1, g0, g1)                   # p <- M(X): one forward, one NFE
            clock.lap("forward")
            win, blk = plan.stats(logits, s - g0, e - g0, cfg.temperature, conf_dtype, generator)
            if win is not None:                                # H <- update(H, p), rows with masks left
                history.update(g0 - P, g1 - P, win, masked.any(-1))
            conf, u = blk.conf, None
            clock.lap("statistics")
            if extrapolator is not None:                       # r^ <- CE(H, F)
                conf, u = extrapolator.update(gs, blk, masked, uncertainty="u" in plan.view)
                clock.lap("ce")
            view = StepView(                                   # what the controller sees; logits, u and the
                step=i, global_step=counts.nfe, x0=blk.x0, conf=conf, raw_conf=blk.conf, entropy=blk.entropy,
                margin=blk.margin, logit_gap=blk.logit_gap, masked=masked, **fixed,   # canvas's mask only if read
                **(schedule.at(i) if schedule else NO_SCHEDULE),
                logits=logits[:, s - g0:e - g0].to(conf_dtype) if "logits" in plan.view else None,
                u=torch.zeros_like(conf) if u is None and "u" in plan.view else u,
                canvas_masked=canvas.gen_masked if "canvas_masked" in plan.view else None)
            clock.lap("statistics")
            decision = controller.decide(view)                 # A <- TSPD(r^, pos, F): which tokens to fix
            clock.lap("controller")
            committed = commit(canvas, block, view, decision, controller.force_progress, track=recorder is not None)
            clock.lap("commit")                                # X <- commit(X, p, A)
            counts.step(b, masked)
            if recorder is not None:
                recorder.record(b, g0 - P, g1 - P, win, gs, conf, committed, canvas.gen_masked)
    return _generation(model, tokenizer, canvas, counts, recorder, clock, t0)


def _generation(model: LoadedModel, tokenizer, canvas: Canvas, counts: StepCounts, recorder: TraceRecorder | None,
                clock: PhaseClock, t0: float) -> Generation:
    """The finished canvas as a :class:`Generation`: its tokens and texts (cut at EOS / EoT), the forwards
    counted, the wall time since ``t0`` and, with ``profile``, its split by phase."""
    special, device = model.special, model.device
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    gen, steps = canvas.gen.cpu(), counts.blocks()
    rows, not_answer = gen.tolist(), {*special.stop_ids(), special.pad, special.mask}
    return Generation(token_ids=gen, texts=decode_texts(tokenizer or model.tokenizer, rows, special.stop_ids()),
                      nfe=counts.nfe, nfe_per_sample=[sum(row) for row in steps], seconds=time.perf_counter() - t0,
                      prompt_length=canvas.prompt_length, trace=recorder.trace() if recorder else None,
                      steps_per_block=steps, truncated=canvas.truncated,
                      answer_tokens=[sum(t not in not_answer for t in row) for row in rows], **clock.seconds())


def _loaded(model) -> LoadedModel:
    """``model`` if it is a :class:`LoadedModel`; a bare network is refused with the fix."""
    if not isinstance(model, LoadedModel):
        raise TypeError(f"generate takes a LoadedModel (tspd.load_model, or LoadedModel(network, tokenizer, "
                        f"special) for a network built in memory), not a {type(model).__name__}")
    return model


def commit(canvas: Canvas, block: torch.Tensor, view: StepView, decision: Decision, force_progress: bool,
           track: bool = True) -> torch.Tensor | None:
    """Write a decision into the canvas in place (Algorithm 1: ``X <- commit(X, p, A)``) through ``block``,
    the current block's view of the canvas; returns the [B, L_gen] mask of new commits (the growth of F),
    or None when not ``track``-ed.

    Invariants: only still-masked positions change; outside the current block only through the
    controller's explicit ``finish`` (Prophet) or ``eos_at`` (End-of-Text Prediction) requests.
    Every branch is a tensor select, never a Python ``if`` on a tensor: a step never waits for the device.
    """
    x, P, mask_id = canvas.x, canvas.prompt_length, canvas.mask_id
    L_gen = x.shape[1] - P
    masked = view.masked
    chosen = decision.commit if decision.within_masked else decision.commit & masked
    if force_progress:   # a row that chose nothing takes its most confident masked position
        chosen = torch.where(chosen.any(-1, keepdim=True), chosen, top_one(view.conf, masked))
    tokens = decision.tokens if decision.tokens is not None else view.x0
    before = x[:, P:] == mask_id if track else None
    torch.where(chosen, tokens, block, out=block)
    if decision.finish is not None:
        gen = x[:, P:]
        x[:, P:] = torch.where(decision.finish[:, None] & (gen == mask_id), view.canvas_x0, gen)
    if decision.eos_at is not None:
        idx = torch.arange(L_gen, device=x.device)
        after = (idx[None, :] > decision.eos_at[:, None]) & (decision.eos_at[:, None] >= 0)
        gen = x[:, P:]
        x[:, P:] = torch.where(after & (gen == mask_id), torch.full_like(gen, view.eos_id), gen)
    return before & (x[:, P:] != mask_id) if track else None
