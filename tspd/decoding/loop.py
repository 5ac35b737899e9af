"""The one generation loop: block-wise semi-autoregressive masked denoising (paper Algorithm 1).

    canvas = [prompt | MASK * gen_length]
    for each block of ``block_length`` positions, left to right:
        repeat until the block has no MASK (or, for LLaDA's fixed schedule, steps_per_block times):
            logits  = model(window)                 one forward = one NFE; the window is the whole
                                                    canvas, or with a KV cache the block (dual) or
                                                    block + suffix (prefix) after a full forward
            stats   = confidence, entropy, margin   of every position of the window
            conf~   = CE(stats)                      optional Confidence Extrapolation (Section 3.3)
            commit  = controller(view of the block)  vanilla, fast-dllm, ..., tspd
            canvas[commit] = candidate tokens        only masked positions of this block, never undone

Controllers (:mod:`tspd.decoding.controllers`), the extrapolator (:mod:`tspd.decoding.extrapolate`) and the cache
mode are the pluggable pieces; nothing here is specific to one of them.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import torch

from tspd.decoding.controllers import Decision, StepView, make_controller
from tspd.decoding.features import StepStats, TraceState, relative_position, step_stats
from tspd.decoding.config import DecodeConfig
from tspd.validate import CACHE_MODES, UsageError, check_fits, max_positions  # noqa: F401 (CACHE_MODES re-exported)
from tspd.decoding.schedule import num_transfer_tokens


@dataclass
class Trace:
    """Per-forward, per-position records over the generated region, each [S, B, L_gen].

    Positions a forward did not compute (outside a cached window) hold NaN (-1 for ``x0``).
    ``committed`` marks the positions fixed at that step; ``block`` is the block index of each step.
    """
    conf: torch.Tensor
    entropy: torch.Tensor
    margin: torch.Tensor
    x0: torch.Tensor
    committed: torch.Tensor
    masked: torch.Tensor
    seen_conf: torch.Tensor   # the confidence the controller saw (CE's when CE is on)
    block: torch.Tensor       # [S]


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


def _prepare(model, prompts, tokenizer, add_special_tokens: bool):
    """Prompts (strings, id lists or a [B, P] tensor) -> left-padded ids [B, P] and mask [B, P]."""
    special = model.special
    if isinstance(prompts, torch.Tensor):
        ids = prompts if prompts.dim() == 2 else prompts[None]
        return ids.long(), torch.ones_like(ids, dtype=torch.long)
    if isinstance(prompts, str):
        prompts = [prompts]
    if not prompts:
        raise ValueError("no prompts given")
    if isinstance(prompts[0], str):
        tokenizer = tokenizer or getattr(model, "tokenizer", None)
        if tokenizer is None:
            raise ValueError("string prompts need a tokenizer (the model directory has none)")
        seqs = [tokenizer(p, add_special_tokens=add_special_tokens, verbose=False)["input_ids"] for p in prompts]
    else:
        seqs = [list(map(int, s)) for s in prompts]
    if any(len(s) == 0 for s in seqs):
        raise ValueError("empty prompt")
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), special.pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, width - len(s):] = torch.tensor(s)
        mask[i, width - len(s):] = 1
    return ids, mask


def _fit(ids, pmask, gen_length: int, limit: int | None, truncate: bool):
    """Prompts that fit the model's positions with the window; with ``truncate``, keep their last tokens."""
    lengths = pmask.sum(-1)
    longest = int(lengths.max())
    if limit is None or longest + gen_length <= limit:
        return ids, pmask, [False] * len(ids)
    if not truncate:
        check_fits(longest, gen_length, limit)
    keep = limit - gen_length
    if keep < 1:
        raise UsageError(f"gen_length {gen_length} leaves no room for a prompt in the model's {limit} positions")
    cut = (lengths > keep).tolist()
    warnings.warn(f"{sum(cut)} prompt(s) left-truncated to their last {keep} tokens (model positions {limit})")
    return ids[:, -keep:], pmask[:, -keep:], cut


def decode_texts(tokenizer, token_ids: torch.Tensor, stop_ids: list[int]) -> list[str]:
    """Decode each row up to its first stop id (EOS / EoT), skipping special tokens."""
    if tokenizer is None:
        return []
    out = []
    for row in token_ids.tolist():
        cut = next((i for i, t in enumerate(row) if t in stop_ids), len(row))
        out.append(tokenizer.decode(row[:cut], skip_special_tokens=True))
    return out


@torch.no_grad()
def generate(model, prompts, config: DecodeConfig | None = None, *, tokenizer=None, record_trace: bool = False,
             add_special_tokens: bool = False, profile: bool = False, truncate_prompt: bool = False,
             **overrides) -> Generation:
    """Decode ``prompts`` with a masked diffusion LM, block by block (paper Algorithm 1).

    Args:
        model: a loaded model (``tspd.load_model``) with ``.special`` token ids and ``.tokenizer``.
        prompts: list of strings (tokenized with ``tokenizer`` / ``model.tokenizer``), list of id lists,
            or a [B, P] id tensor. Batches are left-padded and padding is never attended.
        config: the decoding (:class:`tspd.decoding.config.DecodeConfig`: controller, CE, cache, window,
            steps, temperature, seed, confidence dtype, fast path); None: the defaults, i.e. vanilla
            LLaDA decoding, one token per step over the checkpoint's own window.
        **overrides: DecodeConfig fields changed for this call (``policy="tspd", ce=True,
            cache="dual"``), plus ``threshold=`` as sugar for ``policy_kwargs={"threshold": ...}``.
        record_trace: also return per-step, per-token traces (:class:`Trace`).
        profile: split the wall time into model forwards and control (synchronises the device at
            each boundary, so leave it off when measuring throughput).
        truncate_prompt: a prompt that does not fit the model's positions with the window is refused
            (:class:`tspd.validate.UsageError`); True keeps its last tokens instead, with a warning.

    The first forward of a block is over the whole canvas; with a cache (``prefix``/``dual``, Fast-dLLM)
    later ones cover the block and suffix, or the block alone. ``fast`` replays every window forward
    from a CUDA graph with static buffers (:mod:`tspd.decoding.graphs`); on a CPU the same path runs eagerly.

    Bad arguments raise :class:`tspd.validate.UsageError` (a ValueError) before any decoding.
    """
    cfg = DecodeConfig.of(config, **overrides).resolved(model)
    gen_length, block_length, steps, cache = cfg.gen_length, cfg.block_length, cfg.steps, cfg.cache
    temperature, seed, fast = cfg.temperature, cfg.seed, cfg.fast
    confidence_dtype = getattr(torch, cfg.confidence_dtype)
    num_blocks = cfg.num_blocks
    steps_per_block = steps // num_blocks
    controller = make_controller(cfg.policy, **cfg.policy_kwargs)
    extrapolator = None
    if cfg.ce:
        from tspd.decoding.extrapolate import make_extrapolator
        extrapolator = make_extrapolator(cfg.ce, **cfg.ce_kwargs)

    special, device = model.special, model.device
    generator = torch.Generator(device=device).manual_seed(seed) if seed is not None and temperature > 0 else None
    t0 = time.perf_counter()
    ids, pmask = _prepare(model, prompts, tokenizer, add_special_tokens)
    ids, pmask, truncated = _fit(ids, pmask, gen_length, max_positions(model.config), truncate_prompt)
    B, P = ids.shape
    x = torch.cat([ids, torch.full((B, gen_length), special.mask, dtype=torch.long)], 1).to(device)
    amask = torch.cat([pmask, torch.ones(B, gen_length, dtype=torch.long)], 1).to(device)
    pos = (amask.cumsum(-1) - 1).clamp_min(0)      # RoPE positions ignore left padding
    attn = amask if (amask == 0).any() else None
    T = x.shape[1]

    controller.bind(model)
    controller.reset(B, gen_length, block_length, device)
    if extrapolator is not None:
        extrapolator.reset(B, gen_length, device)
    traces = TraceState(B, gen_length, device)
    runner = kv = None
    if fast:
        from tspd.decoding.graphs import step_graphs
        runner = step_graphs(model, B, T, cached=cache != "none", padded=attn is not None)
        runner.load(pos, attn)
    elif cache != "none":
        kv = model.new_cache()
    canvas_x0 = torch.full((B, gen_length), special.mask, dtype=torch.long, device=device)
    canvas_conf = torch.zeros(B, gen_length, device=device)
    canvas_gap = torch.zeros(B, gen_length, device=device)
    phi = relative_position(block_length, device)
    nfe, global_step = 0, 0
    nfe_rows = torch.zeros(B, dtype=torch.long, device=device)
    block_steps = torch.zeros(B, num_blocks, dtype=torch.long, device=device)
    clock = _Clock(device, enabled=profile)
    rec: dict[str, list] = {k: [] for k in ("conf", "entropy", "margin", "x0", "committed", "masked", "seen_conf", "block")}

    for b in range(num_blocks):
        s, e = P + b * block_length, P + (b + 1) * block_length   # canvas indices of the block
        gs = b * block_length                                        # ... and inside the generated region
        quota = num_transfer_tokens((x[:, s:e] == special.mask).sum(-1), steps_per_block)
        controller.start_block(b)
        for i in range(10 ** 9):
            masked = x[:, s:e] == special.mask
            active = masked.any(-1)
            if controller.fixed_schedule:
                if i >= steps_per_block:
                    break
            elif not active.any():
                break
            # ---- one forward over the window -------------------------------------------------
            if cache == "none" or i == 0:
                w0, w1 = 0, T
            else:
                w0, w1 = s, (e if cache == "dual" else T)
            g0 = max(w0, P)                                            # logits of [g0, w1) only
            clock.start()
            if runner is not None:
                logits = runner(x, w0, w1, g0 - w0)
            else:
                logits = model(x[:, w0:w1], attention_mask=attn, position_ids=pos[:, w0:w1], cache=kv, offset=w0,
                               logits_from=g0 - w0)
            clock.lap("forward")
            logits = _candidates_only(logits, model.config.vocab_size, special.mask)
            nfe += 1
            nfe_rows += active.long()
            block_steps[:, b] += active.long()
            # ---- statistics of the window's generated positions ------------------------------
            st = step_stats(logits, temperature, confidence_dtype, generator)
            canvas_x0[:, g0 - P:w1 - P] = st.x0
            canvas_conf[:, g0 - P:w1 - P] = st.conf.float()
            canvas_gap[:, g0 - P:w1 - P] = st.logit_gap.float()
            traces.update(g0 - P, st.conf, rows=active)
            bl = slice(s - g0, e - g0)                                  # the block inside the window
            blk = StepStats(*(getattr(st, f)[:, bl] for f in ("x0", "conf", "entropy", "margin", "logit_gap")))
            conf, u = blk.conf, torch.zeros_like(blk.conf)
            clock.lap("statistics")
            if extrapolator is not None:
                conf, u = extrapolator.update(gs, blk, masked)
                clock.lap("ce")
            view = StepView(
                step=i, global_step=global_step, total_steps=steps, block=b, num_blocks=num_blocks,
                block_start=gs, steps_per_block=steps_per_block, logits=logits[:, s - g0:e - g0].to(confidence_dtype),
                x0=blk.x0, conf=conf, raw_conf=blk.conf, entropy=blk.entropy, margin=blk.margin,
                logit_gap=blk.logit_gap, ewma=traces.ewma[:, gs:gs + block_length],
                momentum=traces.momentum[:, gs:gs + block_length], phi=phi, u=u, masked=masked,
                quota=quota[:, i] if i < steps_per_block else torch.zeros_like(quota[:, 0]),
                canvas_x0=canvas_x0, canvas_conf=canvas_conf, canvas_masked=x[:, P:] == special.mask,
                eos_id=special.eos, mask_id=special.mask, canvas_gap=canvas_gap)
            clock.lap("statistics")
            decision = controller.decide(view)
            clock.lap("controller")
            committed = _apply(x, P, s, e, view, decision, controller.force_progress, special)
            clock.lap("commit")
            global_step += 1
            if record_trace:
                full = lambda t, fill: torch.full((B, gen_length), fill, dtype=t.dtype, device=device)  # noqa: E731
                for name, val, fill in (("conf", st.conf.float(), float("nan")), ("entropy", st.entropy.float(), float("nan")),
                                        ("margin", st.margin.float(), float("nan")), ("x0", st.x0, -1)):
                    buf = full(val, fill)
                    buf[:, g0 - P:w1 - P] = val
                    rec[name].append(buf.cpu())
                seen = full(conf.float(), float("nan"))
                seen[:, gs:gs + block_length] = conf.float()
                rec["seen_conf"].append(seen.cpu())
                rec["committed"].append(committed.cpu())
                rec["masked"].append((x[:, P:] == special.mask).cpu() | committed.cpu())
                rec["block"].append(b)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    gen = x[:, P:].cpu()
    tok = tokenizer or getattr(model, "tokenizer", None)
    trace = None
    if record_trace and rec["conf"]:
        trace = Trace(**{k: torch.stack(v) for k, v in rec.items() if k != "block"},
                      block=torch.tensor(rec["block"]))
    return Generation(token_ids=gen, texts=decode_texts(tok, gen, special.stop_ids()), nfe=nfe,
                      nfe_per_sample=nfe_rows.tolist(), seconds=seconds, prompt_length=P, trace=trace,
                      steps_per_block=block_steps.tolist(),
                      forward_seconds=clock.total.get("forward", 0.0) if profile else None,
                      control_seconds=clock.control() if profile else None,
                      controller_seconds=clock.total.get("controller", 0.0) if profile else None,
                      ce_seconds=clock.total.get("ce", 0.0) if profile else None,
                      truncated=truncated)


class _Clock:
    """Accumulates wall time per phase; synchronises CUDA at each boundary (profiling only)."""

    def __init__(self, device: torch.device, enabled: bool):
        self.enabled, self.cuda = enabled, device.type == "cuda"
        self.total: dict[str, float] = {}
        self.t = 0.0

    def _now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def start(self) -> None:
        if self.enabled:
            self.t = self._now()

    def lap(self, phase: str) -> None:
        if self.enabled:
            now = self._now()
            self.total[phase] = self.total.get(phase, 0.0) + now - self.t
            self.t = now

    def control(self) -> float:
        """Everything of a step but the forward."""
        return sum(v for k, v in self.total.items() if k != "forward")


def _candidates_only(logits: torch.Tensor, vocab_size: int, mask_id: int) -> torch.Tensor:
    """Drop the head's padding rows beyond ``vocab_size`` and forbid [MASK] as a candidate token.

    LLaDA's reference code does neither; with a trained model neither ever wins the argmax, but a
    committed [MASK] would silently leave its slot undecoded (dInfer excludes it the same way).
    """
    logits = logits[..., :vocab_size]
    if mask_id < vocab_size:
        logits[..., mask_id] = float("-inf")
    return logits


def _apply(x: torch.Tensor, P: int, s: int, e: int, view: StepView, decision: Decision,
           force_progress: bool, special) -> torch.Tensor:
    """Write a decision into the canvas ``x`` in place; returns the [B, L_gen] mask of new commits.

    Invariants: only still-masked positions change; outside the current block only through the
    controller's explicit ``finish`` (Prophet) or ``eos_at`` (End-of-Text Prediction) requests.
    Every branch is a tensor select, never a Python ``if`` on a tensor: a step never waits for the device.
    """
    L_gen = x.shape[1] - P
    masked = view.masked
    commit = decision.commit & masked
    if force_progress:
        stalled = masked.any(-1) & ~commit.any(-1)
        best = view.conf.masked_fill(~masked, float("-inf")).argmax(-1, keepdim=True)
        slot = torch.arange(masked.shape[1], device=x.device)
        commit = commit | (stalled[:, None] & (slot[None, :] == best))
    tokens = decision.tokens if decision.tokens is not None else view.x0
    before = x[:, P:] == special.mask
    x[:, s:e] = torch.where(commit, tokens, x[:, s:e])
    if decision.finish is not None:
        gen = x[:, P:]
        x[:, P:] = torch.where(decision.finish[:, None] & (gen == special.mask), view.canvas_x0, gen)
    if decision.eos_at is not None:
        idx = torch.arange(L_gen, device=x.device)
        after = (idx[None, :] > decision.eos_at[:, None]) & (decision.eos_at[:, None] >= 0)
        gen = x[:, P:]
        x[:, P:] = torch.where(after & (gen == special.mask), torch.full_like(gen, special.eos), gen)
    return before & (x[:, P:] != special.mask)
