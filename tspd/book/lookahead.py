"""Figures 3 and 4 (Sec. 4.2, Confidence Extrapolation): a vanilla decode with CE observing, every step recorded,
reduced to what the two figures show and stored beside the trace sets (``results/variants/lookahead-<key>.pt``),
so the book reads it back instead of decoding again (the full per-step trace is too large to keep).

Per token of the window (``[B, L]``; a step index, ``S`` where it never happens):

- ``t_wait``: the first step its raw confidence reaches the threshold while masked (passive waiting, Fast-dLLM);
- ``t_look``: the first step the look-ahead horizon ``h*`` is positive while masked (Fig. 3's rule, ``h <= H``);
- ``t_ce``: the first step CE as decoded lifts it (``h <= h_pot``); ``t_commit``: the step vanilla commits it;
- ``right_look`` / ``right_ce``: whether that step's argmax is the token it finally gets;
- ``judged`` / ``consistent``: Fig. 4's steps judged and those inside the one-step forecast band (Eq. 9).

Per batch, ``examples`` keeps Fig. 3's example: the token the look-ahead saves most steps for, with its final
token, and its confidence series and the forecast made at its look-ahead step.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tspd.decoding.extrapolate import CEConfig, forecast, horizon_terms, replay, select_horizon
from tspd.models.loading import DEFAULT_MODEL, window
from tspd.provenance import settings_digest
from tspd.records.files import write_atomic

FORMAT = "tspd-lookahead-1"
PER_TOKEN = {"t_wait": torch.int16, "t_look": torch.int16, "t_ce": torch.int16, "t_commit": torch.int16,
             "right_look": torch.bool, "right_ce": torch.bool, "judged": torch.int16, "consistent": torch.int16}


@dataclass(frozen=True)
class LookaheadSpec:
    """One recorded decode and its reduction; every field is in the stored file's key."""
    model: str = DEFAULT_MODEL       # embedded model name or local checkpoint directory
    prompts: str = "arith-traces"    # tspd.training.traces.load_prompts source
    n: int = 32                      # prompts decoded with every step recorded (at least 30 for a verdict)
    gen_length: int | None = None    # None: the checkpoint's own window (tspd.models.loading.decode_lengths)
    block_length: int | None = None
    steps: int | None = None         # None: one token per step
    device: str = "cpu"
    dtype: str | None = None
    flan_source: str | None = None   # with prompts="flan": a local FLAN JSONL file or a datasets hub id
    chat: bool = False               # wrap prompts in the tokenizer's chat template (Instruct checkpoints)
    threshold: float = 0.9           # passive waiting: Fast-dLLM's threshold (Fig. 3)
    ce: dict = field(default_factory=dict)   # CEConfig settings (empty: the defaults)
    band_z: float = 1.645            # Fig. 4: half-width of the consistency band in forecast standard deviations
    min_history: int = 2             # Fig. 4: observations of the current top-1 token before a step is judged
    batch_size: int = 8              # prompts decoded together (a reproduction check redoes the first batch)

    def __post_init__(self):
        gen_length, block_length = window(self.model, self.gen_length, self.block_length)
        object.__setattr__(self, "gen_length", gen_length)    # frozen
        object.__setattr__(self, "block_length", block_length)
        CEConfig(**self.ce)   # unknown CE settings fail here, before any decoding

    @property
    def key(self) -> str:
        from tspd.models.loaded import model_fingerprint
        d = {**dataclasses.asdict(self), "weights": model_fingerprint(self.model)}   # new weights, new record
        return settings_digest(d)


def reduce(gen, spec: LookaheadSpec) -> dict:
    """One decoded batch (``generate(..., ce=True, record_trace=True)``) reduced to the per-token arrays and its
    example (see the module's docstring)."""
    cfg, Lb, tr = CEConfig(**spec.ce), spec.block_length, gen.trace
    S, B, L = tr.conf.shape
    one = horizon_terms(torch.ones(1), cfg.q_level, cfg.q_vel)
    history, judged, consistent = (torch.zeros(B, L, dtype=torch.long) for _ in range(3))

    def judge_step(s, sl, stats, masked, ext):
        """Before the filter moves: does this step's observation fall inside the one-step forecast band?"""
        before, token = ext.state[:, sl].clone(), ext.token[:, sl].clone()
        mean, var = forecast(*before.unbind(-1), one)
        y = ext.observe(stats)
        flipped = (token >= 0) & (stats.x0 != token)
        inside = (y - mean[..., 0]).abs() <= spec.band_z * (var[..., 0] + cfg.r).sqrt()
        judge = masked & (history[:, sl] >= spec.min_history)
        judged[:, sl] += judge
        consistent[:, sl] += judge & ~flipped & inside
        history[:, sl] = torch.where(masked, torch.where(flipped, 1, history[:, sl] + 1), history[:, sl])

    rep = replay(tr, cfg, Lb, before=judge_step)
    horizons = torch.arange(cfg.H + 1, dtype=torch.float32)
    mean, var = forecast(*rep.state.unbind(-1), horizon_terms(horizons, cfg.q_level, cfg.q_vel))
    h_star, _, _ = select_horizon(mean, var, horizons, torch.full(rep.state.shape[:-1], float(cfg.H)), cfg.z, cfg.c_min)
    steps = torch.arange(S)[:, None, None].expand(S, B, L)
    first = lambda cond: torch.where(cond, steps, S).amin(0)   # noqa: E731  first step where cond holds, S if none
    final = gen.token_ids.cpu()
    right_at = lambda t: (t < S) & (tr.x0.gather(0, t.clamp(max=S - 1)[None])[0] == final)  # noqa: E731
    out = {"t_wait": first(rep.observed & (tr.conf >= spec.threshold)), "t_look": first(rep.observed & (h_star > 0)),
           "t_ce": first(rep.observed & rep.lifted), "t_commit": first(tr.committed), "judged": judged,
           "consistent": consistent}
    out["right_look"], out["right_ce"] = right_at(out["t_look"]), right_at(out["t_ce"])
    gap = torch.where((out["t_look"] < out["t_wait"]) & (out["t_wait"] < S) & out["right_look"],
                      out["t_wait"] - out["t_look"], 0)
    example = None
    if int(gap.max()) > 0:
        r, i = divmod(int(gap.flatten().argmax()), L)
        block_steps = (tr.block == i // Lb).nonzero()[:, 0]
        tl = int(out["t_look"][r, i])
        curves = {"observed": rep.observed[:, r, i], "conf": tr.conf[:, r, i], "final": tr.x0[:, r, i] == final[r, i],
                  "mean": mean[tl, r, i, 1:], "sd": var[tl, r, i, 1:].sqrt()}
        example = {"saved": int(gap.max()), "prompt": r, "position": i, "block": i // Lb,
                   "first_step": int(block_steps[0]), "block_steps": len(block_steps),
                   **{k: v.clone() for k, v in curves.items()}}   # copies: a view would store its whole trace
    return {**out, "steps": S, "reproduced": rep.reproduced, "example": example}


def measure(spec: LookaheadSpec, progress: bool = True) -> dict:
    """Decode ``spec``'s prompts batch by batch with every step recorded and reduce each batch."""
    from tqdm.auto import tqdm

    from tspd.decoding.loop import generate
    from tspd.models.loaded import get_model
    from tspd.tasks.base import render_prompt
    from tspd.training.traces import load_prompts
    lm = get_model(spec.model, spec.device, spec.dtype)
    texts = [render_prompt(q, lm.tokenizer, spec.chat) for q in load_prompts(spec.prompts, spec.n, spec.flan_source)]
    cfg = CEConfig(**spec.ce)
    parts = []
    for start in tqdm(range(0, len(texts), spec.batch_size), desc="recorded decode", disable=not progress):
        gen = generate(lm, texts[start:start + spec.batch_size], gen_length=spec.gen_length,
                       block_length=spec.block_length, steps=spec.steps, controller="vanilla", ce=True,
                       ce_kwargs=dataclasses.asdict(cfg), record_trace=True)
        parts.append(reduce(gen, spec))
    return _joined(parts, spec)


def _joined(parts: list[dict], spec: LookaheadSpec) -> dict:
    from tspd.provenance import device_name, git_revision
    return {"format": FORMAT, "spec": dataclasses.asdict(spec), "revision": git_revision(),
            "device": device_name(spec.device), "steps": parts[0]["steps"],
            "reproduced": all(p["reproduced"] for p in parts), "examples": [p["example"] for p in parts],
            **{k: torch.cat([p[k] for p in parts]).to(dtype) for k, dtype in PER_TOKEN.items()}}


def stored_path(spec: LookaheadSpec, variants_dir: str | Path) -> Path:
    return Path(variants_dir) / f"lookahead-{spec.key}.pt"


def lookahead(spec: LookaheadSpec, variants_dir: str | Path, progress: bool = True) -> dict:
    """``spec``'s reduction, measured once and then read back from ``variants_dir``
    (:func:`tspd.book.variants_dir` of a notebook's ``results_dir``)."""
    path = stored_path(spec, variants_dir)
    if path.is_file():
        data = torch.load(path, weights_only=False)
        if data.get("format") == FORMAT:
            return data
    data = measure(spec, progress)
    write_atomic(path, lambda tmp: torch.save(data, tmp))   # an interrupted decode leaves no torn file
    return data


def example(data: dict) -> dict | None:
    """Fig. 3's example over every batch: the most steps saved (the first batch's on a tie); None without one."""
    found = [(e["saved"], -k, k) for k, e in enumerate(data["examples"]) if e is not None]
    if not found:
        return None
    k = max(found)[2]
    return {**data["examples"][k], "prompt": k * data["spec"]["batch_size"] + data["examples"][k]["prompt"]}


__all__ = ["LookaheadSpec", "PER_TOKEN", "reduce", "measure", "lookahead", "stored_path", "example"]
