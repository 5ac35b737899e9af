"""``python -m tspd train-lm``: train the embedded ``tiny-arith`` diffusion LM on :mod:`tspd.eval.tasks.arith`.

Objective: LLaDA's supervised fine-tuning loss (Nie et al., 2025, Sec. 2.3 / Eq. 5). A sequence is
``prompt + answer``, the answer padded with EOS up to ``gen_length``. For each sample draw
``t ~ U(eps, 1]`` and mask every answer-region position (EOS padding included) independently with
probability ``t``; the prompt is never masked. The loss is the cross-entropy of the masked positions,
each weighted by ``1/t``, summed and divided by the answer-region length, averaged over the batch::

    L = E_b [ 1/L_ans * sum_{i in answer, masked} -log p(x_i | x_t) / t ]

Batches are left-padded with the pad token and carry an attention mask and ``position_ids =
cumsum(mask) - 1``: exactly how :func:`tspd.decoding.loop.generate` batches prompts at inference.
The times ``t`` of a batch are stratified (one draw in each of ``B`` equal slices of ``(eps, 1]``, in a
random order), which keeps the expectation and lowers the variance of the 1/t-weighted loss.
Optimiser: AdamW, linear warmup then cosine decay (over steps, or over wall time with ``--minutes``),
gradient clipping at 1.0, bf16 autocast on CUDA and fp32 on CPU, optional ``torch.compile``.

``--resume`` continues an interrupted run from its last saved state (``train_state.pt``: fp32
weights, optimiser, step, elapsed time, learning curve), on the same data stream and schedule.
``--eval-minutes`` scores the model on held-out problems every few minutes of training (the learning
curve, ``eval_log.csv``); evaluation time does not count against ``--minutes``.

Outputs in ``--out``: ``config.json`` + ``model.safetensors`` (bf16, rewritten every few minutes so an
interrupted run leaves a valid checkpoint), the character tokenizer, ``train_log.csv``,
``eval_log.csv`` and ``TRAINING.md`` (command, revision, device, wall time, loss, learning curve and
the held-out accuracy of 1 token per step against parallel decoding: the sweep of :data:`SWEEP`).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import json
import math
import os
import queue
import random
import shlex
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from tspd.eval.tasks import arith
from tspd.eval.tasks.generated import GENERATED, generated_task
from tspd.models.char_tokenizer import build_tokenizer
from tspd.models.subword_tokenizer import train_tokenizer
from tspd.training.warm_start import warm_start
from tspd.training import probes
from tspd.training.masking import SCHEMES, Masking, mask_answer
from tspd.eval.regime import REGIME_COLUMNS, RegimeConfig, regime_figures, summary
from tspd.eval.results import wilson
from tspd.models.config import LLaDAConfig
from tspd.models.loading import LoadedModel, save_model, special_tokens
from tspd.models.llada import LLaDAModelLM
from tspd.options import add_dataclass_arguments, from_args
from tspd.provenance import device_name, git_revision

GPU_COMMAND = ("python -m tspd train-lm --out tspd/zoo/tiny-arith --device cuda --compile --minutes 8 "
               "--d-model 256 --n-layers 6 --n-heads 4 --mlp-hidden 704 --batch-size 256")
STATE = "train_state.pt"   # resumable training state beside the checkpoint (not shipped)
# The final evaluation: 1 token per step, then what parallel decoding costs (Sec. 1: committing several
# tokens per step loses accuracy). (policy, threshold, tokens per step).
SWEEP = [("vanilla", None, 1)] + [("fast-dllm", t, None) for t in (0.95, 0.9, 0.8, 0.7, 0.5)] + \
        [("vanilla", None, k) for k in (2, 4, 8)]


@dataclass
class LMTrainConfig:
    out: str
    task: str = "arith"            # the generated task trained on: arith (3-4 short lines) | chain (5-10 lines, 256 window)
    d_model: int = 128             # width (the task, not the model size, is the lever on a CPU)
    n_layers: int = 4              # transformer blocks
    n_heads: int = 4               # attention heads
    mlp_hidden: int = 352          # SwiGLU width 2.75 x d_model: 0.83M parameters, trainable on a 2-core CPU
    gen_length: int | None = None  # answer region = the inference window (None: the task's own: arith 64, chain 256)
    block_length: int | None = None  # semi-AR block of evaluation and block masking (None: the task's own, 32)
    long_windows: str = ""         # share of batches in longer windows, e.g. 512:0.15,1024:0.05 (answers EOS-filled)
    tokenizer: str = "bpe"         # bpe: subword, trained on the task's text (digits one per token) | char
    masking: str = "uniform"       # uniform (LLaDA) | prefix | block | causal (tspd.training.masking)
    mask_mix: float = 0.0          # share of each batch masked by --masking; the rest uniform
    alter_frac: float = 0.0        # share of problems with line 1's result altered and carried through (read what is written)
    alter_any: float = 0.0         # share of those altered to any value, learned only up to the line it breaks (copy anyway)
    swap_frac: float = 0.0         # share of problems with + and * operands in random order (two right answers a line)
    batch_size: int = 64           # sequences per optimizer step
    lr: float = 3e-3               # peak AdamW learning rate
    min_lr_frac: float = 0.1       # cosine decays to lr * min_lr_frac
    warmup_frac: float = 0.03      # of the run (steps or minutes)
    weight_decay: float = 0.1      # on matrices only, not on norms and embeddings
    eps: float = 1e-3              # t ~ U(eps, 1]: LLaDA's lower bound keeps the 1/t weight finite
    minutes: float | None = None   # wall-time budget of the training loop (schedule follows time)
    max_steps: int | None = None   # step budget (with --minutes: whichever ends first)
    device: str = "cpu"            # cpu | cuda (bf16 autocast on CUDA)
    compile: bool = False          # torch.compile the model: about 2x faster on this CPU after a ~1 min compile
    seed: int = 0                  # initialisation, data stream and masking noise
    eval_every: int = 0            # steps between in-training evaluations (0 = never)
    eval_minutes: float = 0.0      # minutes of training between evaluations: the learning curve (0 = never)
    eval_n: int = 200              # test problems for in-training evaluations (accuracy and probes)
    regime: bool = False           # also log the regime figures at each evaluation (tspd.eval.regime: TPF, caches, 2x window)
    regime_long_n: int = 32        # problems for the 2x window's vanilla figure (a forward per token: costly)
    gate_minutes: float = 0.0      # stop a try that cannot copy question numbers by then (0 = never)
    gate_copy: float = 0.5         # question-number probe a try needs by --gate-minutes
    final_eval_n: int = 500        # test problems for the final numbers (0 = skip)
    eval_batch: int = 500          # prompts per generate() call
    save_minutes: float = 5.0      # checkpoint period, so an interrupted run leaves a model
    log_every: int = 25            # steps between log lines (and at least one a minute)
    prompt_multiple: int = 8       # prompt width rounded up to this: few distinct shapes for compile
    threads: int | None = None     # torch CPU threads (None = torch's default)
    resume: bool = False           # continue from --out's train_state.pt (same data stream and schedule)
    init_from: str | None = None   # warm start from this checkpoint: its tokenizer, embeddings, head and blocks
    init_layers: str | None = None  # which of --init-from's blocks, in order, e.g. 0,3 (default: its first --n-layers)

    def __post_init__(self):   # the window defaults to the task's own
        task = generated_task(self.task)
        if self.gen_length is None:
            self.gen_length = task.GEN_LENGTH
        if self.block_length is None:
            self.block_length = task.BLOCK_LENGTH
        windows(self)          # a malformed --long-windows fails here, before anything runs


def windows(cfg: "LMTrainConfig") -> list[tuple[int, float]]:
    """``--long-windows`` as ``[(window, share)]``: each window a multiple of ``gen_length``, shares < 1 in all."""
    out = []
    for part in filter(None, cfg.long_windows.replace(" ", "").split(",")):
        try:
            w, share = part.split(":")
            out.append((int(w), float(share)))
        except ValueError:
            raise ValueError(f"--long-windows: {part!r} is not WINDOW:SHARE (e.g. 512:0.15)") from None
    for w, share in out:
        if w <= cfg.gen_length or w % cfg.block_length or not 0 < share < 1:
            raise ValueError(f"--long-windows: {w}:{share} needs a window above {cfg.gen_length}, a multiple of "
                             f"{cfg.block_length}, and a share in (0, 1)")
    if sum(s for _, s in out) >= 1:
        raise ValueError("--long-windows: the shares must leave some batches at --gen-length")
    return out


CHOICES = {"task": list(GENERATED), "device": ["cpu", "cuda"], "tokenizer": ["bpe", "char"], "masking": list(SCHEMES)}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output checkpoint directory")
    add_dataclass_arguments(p, LMTrainConfig, skip=("out",), choices=CHOICES)
    p.add_argument("--eval-only", action="store_true",
                   help="skip training: evaluate the checkpoint in --out and append to its TRAINING.md")


def command_line(cfg: LMTrainConfig) -> str:
    """The exact command that reproduces this run (every option spelt out)."""
    parts = ["python", "-m", "tspd", "train-lm"]
    for k, v in asdict(cfg).items():
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            parts += [flag] if v else []
        elif v is not None:
            parts += [flag, str(v)]
    return shlex.join(parts)


# ----------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------
def model_config(cfg: LMTrainConfig, tokenizer) -> LLaDAConfig:
    """An LLaDAConfig whose vocabulary and special ids come from the tokenizer."""
    task = generated_task(cfg.task)
    longest = max([cfg.gen_length] + [w for w, _ in windows(cfg)])
    return LLaDAConfig(
        d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, mlp_hidden_size=cfg.mlp_hidden,
        vocab_size=len(tokenizer), max_sequence_length=max(512, 2 * longest), rope_theta=10000.0,
        mask_token_id=tokenizer.mask_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        extra={"tspd_task": {"name": task.__name__, "fingerprint": task.fingerprint(),
                             "prompt": "the question text, no template",
                             "gen_length": cfg.gen_length, "block_length": cfg.block_length}})


def init_weights(model: LLaDAModelLM) -> None:
    """GPT-2 style: N(0, 0.02) everywhere, residual output projections scaled by 1/sqrt(2 n_layers)."""
    std = 0.02
    for name, p in model.named_parameters():
        if p.dim() < 2:
            continue                                  # RMSNorm weights stay 1
        residual = ".blocks." in name and name.endswith(("attn_out.weight", "ff_out.weight"))
        scale = 1 / math.sqrt(2 * model.config.n_layers) if residual else 1.0
        torch.nn.init.normal_(p, mean=0.0, std=std * scale)


def make_tokenizer(cfg: LMTrainConfig, out: Path):
    """The run's tokenizer, saved in ``out``; a resumed run reloads the one it started with, a warm start
    takes its source's."""
    from tspd.models.loading import load_tokenizer

    if cfg.resume and (out / "tokenizer.json").is_file():
        return load_tokenizer(out)
    if cfg.init_from:   # a warm start keeps the source's ids (tspd.training.warm_start)
        tokenizer = load_tokenizer(cfg.init_from)
        tokenizer.save_pretrained(str(out))
        return tokenizer
    if cfg.tokenizer == "char":
        return build_tokenizer(out)
    return train_tokenizer(task_texts(generated_task(cfg.task)), out)


def task_texts(task=arith, n: int = 20000, seed: str = "tokenizer") -> list[str]:
    """Questions and worked answers of ``n`` training problems of ``task`` (never a test or traces problem):
    what the subword tokenizer's merges are learned from."""
    stream = task.iter_train(seed)
    problems = [next(stream) for _ in range(n)]
    return [p["question"] for p in problems] + [p["answer"] for p in problems]


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------------------------
# Data: left-padded prompt + EOS-padded answer
# ----------------------------------------------------------------------------------------------
@dataclass
class Batch:
    input_ids: torch.Tensor       # [B, P + L] clean tokens: left pad, prompt, answer, EOS fill
    attention_mask: torch.Tensor  # [B, P + L] 0 on left padding
    position_ids: torch.Tensor    # [B, P + L] cumsum(mask) - 1
    prompt_width: int             # P: the answer region is input_ids[:, P:]
    clean: torch.Tensor | None = None   # [B, 1] answer tokens kept clean (an altered solution's line 1), or None
    until: torch.Tensor | None = None   # [B, 1] answer tokens scored, from the start (a partial alteration; 0: all)

    def to(self, device) -> "Batch":
        nb = device.type == "cuda"
        move = lambda x: None if x is None else x.to(device, non_blocking=nb)   # noqa: E731
        return Batch(move(self.input_ids), move(self.attention_mask), move(self.position_ids), self.prompt_width,
                     move(self.clean), move(self.until))

    def pin_memory(self) -> "Batch":
        pin = lambda x: None if x is None else x.pin_memory()   # noqa: E731
        return Batch(pin(self.input_ids), pin(self.attention_mask), pin(self.position_ids), self.prompt_width,
                     pin(self.clean), pin(self.until))


def encode_answer(tokenizer, answer: str, gen_length: int, clean_chars: int = 0,
                  scored_chars: int = 0) -> tuple[list[int], int, int]:
    """Answer ids followed by EOS up to ``gen_length`` (the answer must leave room for one EOS), and how
    many of its tokens end within its first ``clean_chars`` characters (an altered solution's clean prefix)
    and within its first ``scored_chars`` (a partial alteration's learnable part; 0 when not given)."""
    enc = tokenizer(answer, add_special_tokens=False, return_offsets_mapping=bool(clean_chars or scored_chars))
    ids = enc["input_ids"]
    if len(ids) >= gen_length:
        raise ValueError(f"answer of {len(ids)} tokens does not fit gen_length={gen_length} with an EOS after it")
    within = lambda chars: sum(end <= chars for _, end in enc["offset_mapping"]) if chars else 0   # noqa: E731
    return ids + [tokenizer.eos_token_id] * (gen_length - len(ids)), within(clean_chars), within(scored_chars)


def make_batch(tokenizer, problems: list[dict], gen_length: int, prompt_multiple: int = 1) -> Batch:
    """Collate problems the way inference batches prompts (left padding with the pad token)."""
    prompts = tokenizer([p["question"] for p in problems], add_special_tokens=False)["input_ids"]   # task.prompt
    width = max(map(len, prompts))
    width = -(-width // prompt_multiple) * prompt_multiple
    B = len(problems)
    ids = torch.full((B, width + gen_length), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((B, width + gen_length), dtype=torch.long)
    clean = torch.zeros((B, 1), dtype=torch.long)
    until = torch.zeros((B, 1), dtype=torch.long)
    for i, (p, pr) in enumerate(zip(problems, prompts)):
        ids[i, width - len(pr):width] = torch.tensor(pr)
        answer, clean[i], until[i] = encode_answer(tokenizer, p["answer"], gen_length, p.get("clean_chars", 0),
                                                   p.get("scored_chars", 0))
        ids[i, width:] = torch.tensor(answer)     # an altered solution's tokens up to ``clean`` stay visible
        mask[i, width - len(pr):] = 1
    pos = (mask.cumsum(-1) - 1).clamp_min(0)
    return Batch(ids, mask, pos, width, clean if clean.any() else None, until if until.any() else None)


class BatchStream:
    """Training batches from the task's ``iter_train``, built ahead in a background thread.

    With ``--long-windows`` a batch's window is drawn from a generator seeded by its index (a resumed run
    draws the same), and a longer window's batch holds proportionally fewer problems (about the same
    positions a step); every batch draws ``batch_size`` problems from the stream all the same, so the
    stream's position stays ``index * batch_size``.
    """

    def __init__(self, tokenizer, cfg: LMTrainConfig, prefetch: int = 4, skip_batches: int = 0):
        self.tokenizer, self.cfg = tokenizer, cfg
        self.task = generated_task(cfg.task)
        self.windows = windows(cfg)
        self.problems = self.task.iter_train(cfg.seed)
        for _ in range(skip_batches * cfg.batch_size):   # a resumed run continues the same stream
            next(self.problems)
        self.index = skip_batches
        self.queue: queue.Queue = queue.Queue(maxsize=prefetch)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._fill, daemon=True)
        self.thread.start()

    def _fill(self) -> None:
        try:
            while not self.stop.is_set():
                chunk = [next(self.problems) for _ in range(self.cfg.batch_size)]
                if self.cfg.alter_frac:   # the same alterations after a resume: seeded by the batch's index
                    rng = random.Random(f"alter-{self.cfg.seed}-{self.index}")
                    chunk = [(rng.random() < self.cfg.alter_frac and self.task.altered(p, rng, self._partial(rng))) or p
                             for p in chunk]
                if self.cfg.swap_frac:
                    rng = random.Random(f"swap-{self.cfg.seed}-{self.index}")
                    chunk = [self.task.reordered(p, rng) if rng.random() < self.cfg.swap_frac else p for p in chunk]
                window = self._window()
                self.index += 1
                chunk = chunk[:max(1, len(chunk) * self.cfg.gen_length // window)]
                batch = make_batch(self.tokenizer, chunk, window, self.cfg.prompt_multiple)
                if torch.cuda.is_available() and self.cfg.device == "cuda":
                    batch = batch.pin_memory()
                self._put(batch)
        except BaseException as e:   # hand the error to the training loop instead of leaving it waiting
            self._put(e)

    def _window(self) -> int:
        """This batch's answer window: ``gen_length``, or a longer one with its ``--long-windows`` share."""
        if not self.windows:
            return self.cfg.gen_length
        u = random.Random(f"window-{self.cfg.seed}-{self.index}").random()
        for w, share in self.windows:
            if u < share:
                return w
            u -= share
        return self.cfg.gen_length

    def _partial(self, rng: random.Random) -> bool:
        """Whether an altered problem takes any value (``alter_any``); no draw when 0, so older runs resume alike."""
        return bool(self.cfg.alter_any) and rng.random() < self.cfg.alter_any

    def _put(self, item) -> None:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.5)
                return
            except queue.Full:
                pass

    def __next__(self) -> Batch:
        item = self.queue.get()
        if isinstance(item, BaseException):
            raise RuntimeError("building a training batch failed") from item
        return item

    def close(self) -> None:
        self.stop.set()


# ----------------------------------------------------------------------------------------------
# Objective
# ----------------------------------------------------------------------------------------------
def sft_loss(model, batch: Batch, mask_id: int, eps: float = 1e-3,
             generator: torch.Generator | None = None, masking: Masking = Masking(),
             eos_id: int | None = None) -> torch.Tensor:
    """LLaDA SFT loss (Eq. 5): masked-token CE weighted by 1/t over the answer region / its length.

    ``masking`` says which positions are masked and scored (:mod:`tspd.training.masking`); the default
    is LLaDA's uniform masking, where every masked position is scored.
    """
    ids, P = batch.input_ids, batch.prompt_width
    answer = ids[:, P:]
    B, L = answer.shape
    t = eps + (1 - eps) * stratified_uniform(B, ids.device, generator)   # t in (eps, 1]
    masked, scored, ratio = mask_answer(answer, t, eos_id, masking, generator, batch.clean, batch.until)
    noisy = torch.cat([ids[:, :P], torch.where(masked, torch.full_like(answer, mask_id), answer)], 1)
    logits = model(noisy, attention_mask=batch.attention_mask, position_ids=batch.position_ids, logits_from=P)
    ce = F.cross_entropy(logits.float().reshape(B * L, -1), answer.reshape(-1), reduction="none").view(B, L)
    return ((ce * scored / ratio).sum(-1) / L).mean()


def stratified_uniform(n: int, device, generator: torch.Generator | None = None) -> torch.Tensor:
    """``[n, 1]`` draws in [0, 1), one in each slice [i/n, (i+1)/n), shuffled: uniform marginals, less variance."""
    u = torch.rand(n, device=device, generator=generator)
    order = torch.randperm(n, device=device, generator=generator)
    return ((order + u) / n).unsqueeze(1)


def lr_factor(progress: float, warmup_frac: float, min_lr_frac: float) -> float:
    """Linear warmup over the first ``warmup_frac`` of the run, then cosine decay to ``min_lr_frac``."""
    if progress < warmup_frac:
        return max(progress / warmup_frac, 1e-3)
    p = min((progress - warmup_frac) / max(1 - warmup_frac, 1e-9), 1.0)
    return min_lr_frac + (1 - min_lr_frac) * 0.5 * (1 + math.cos(math.pi * p))


def make_optimizer(model: torch.nn.Module, cfg: LMTrainConfig, fused: bool) -> torch.optim.Optimizer:
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "wte" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "wte" not in n)]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95), fused=fused)


# ----------------------------------------------------------------------------------------------
# Evaluation (through tspd.generate, the same code path as every benchmark)
# ----------------------------------------------------------------------------------------------
@torch.no_grad()
def evaluate(model, problems: list[dict], gen_length: int = 128, block_length: int = 32,
             steps: int | None = None, policy: str = "vanilla", threshold: float | None = None,
             batch: int = 500, task=arith) -> dict:
    """Final-answer accuracy of ``model`` (with ``.tokenizer``/``.special``) on ``problems`` of ``task``."""
    from tspd.decoding.config import DecodeConfig
    from tspd.eval.regime import score

    steps = gen_length if steps is None else steps
    decode = DecodeConfig.of(policy=policy, threshold=threshold, gen_length=gen_length, block_length=block_length,
                             steps=steps)
    r = score(model, task, problems, decode, batch)
    return {"policy": policy, "threshold": threshold, "steps": steps, "n": r["n"], "correct": r["correct"],
            "accuracy": r["accuracy"] if r["n"] else 0.0, "nfe": r["nfe"], "tpf": r["tpf"],
            "lines": task.line_accuracy(problems, r["texts"]), "templates": task.template_accuracy(problems, r["texts"])}


def final_evaluation(out: Path, cfg: LMTrainConfig, log) -> list[dict]:
    """Reload the saved checkpoint and score it with every decoding of :data:`SWEEP`.

    Each row is written to ``evals.json`` as soon as it is measured, with the checkpoint's hash; an
    interrupted sweep rerun on the same checkpoint (``--eval-only``) keeps those rows and measures
    only the rest.
    """
    from tspd.models.loading import load_model

    if cfg.final_eval_n <= 0:
        return []
    model = load_model(out, device=cfg.device)
    task = generated_task(cfg.task)
    problems = task.load_split("test", min(cfg.final_eval_n, task.SPLIT_SIZES["test"]))
    weights = hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()[:16]
    path = out / "evals.json"
    before = json.loads(path.read_text()) if path.exists() else []
    done = {(r["policy"], r["threshold"], r.get("tokens_per_step"), r["n"]): r for r in before
            if r.get("weights") == weights and "accuracy" in r}
    results = []
    for policy, threshold, per_step in SWEEP:
        if (policy, threshold, per_step, len(problems)) in done:
            results.append(done[policy, threshold, per_step, len(problems)])
            continue
        t0 = time.time()
        steps = cfg.gen_length // per_step if per_step else cfg.gen_length
        try:
            r = evaluate(model, problems, cfg.gen_length, cfg.block_length, steps, policy,
                         threshold, cfg.eval_batch, task)
        except Exception as e:   # a decoding policy that is missing or broken must not lose the checkpoint
            r = {"policy": policy, "threshold": threshold, "n": len(problems), "error": f"{type(e).__name__}: {e}"}
        r["tokens_per_step"] = per_step
        r["seconds"] = round(time.time() - t0, 1)
        r["weights"] = weights
        log(f"eval {policy} threshold={threshold} tokens/step={per_step}: " +
            (f"{r['accuracy']:.1%} of {r['n']} (nfe {r['nfe']}, {r['seconds']} s)" if "accuracy" in r else r["error"]))
        results.append(r)
        path.write_text(json.dumps(results, indent=1) + "\n")
    return results


# ----------------------------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------------------------
def _decoding_name(r: dict) -> str:
    if r["policy"] == "vanilla":
        k = r.get("tokens_per_step") or 1
        return "1 token per step (vanilla)" if k == 1 else f"{k} tokens per step (vanilla, fixed schedule)"
    return f"{r['policy']}, confidence threshold {r['threshold']}"


def sweep_table(evals: list[dict]) -> list[str]:
    """Markdown rows: accuracy with its 95 % interval, change against 1 token per step, forwards."""
    base = next((r for r in evals if r["policy"] == "vanilla" and (r.get("tokens_per_step") or 1) == 1
                 and "accuracy" in r), None)
    rows = ["| decoding | accuracy (95 % interval) | vs 1 token/step (points) | n | forwards (batch max) |",
            "|---|---|---|---|---|"]
    for r in evals:
        if "accuracy" not in r:
            rows.append(f"| {_decoding_name(r)} | not measured: {r['error']} | | {r['n']} | |")
            continue
        lo, hi = wilson(r["correct"], r["n"])
        delta = f"{100 * (r['accuracy'] - base['accuracy']):+.1f}" if base and r is not base else ""
        rows.append(f"| {_decoding_name(r)} | {r['accuracy']:.1%} ({r['correct']}/{r['n']}; "
                    f"{lo:.1%}-{hi:.1%}) | {delta} | {r['n']} | {r['nfe']} |")
    return rows


# The learning curve's probes: with everything after the span masked (the state of a decoder that has written
# the answer up to it), so a later line cannot give the span away.
CURVE_PROBES = {"next_operand_question": "question numbers", "next_operand_result": "earlier results",
                "next_result_mul": "products", "next_result_add": "sums", "next_result_sub": "differences",
                "next_final": "final line", "cf_next_copied": "counterfactual: copies",
                "one_pass_final": "final in one forward"}


REGIME_NAMES = {"fast_tpf": "Fast-dLLM 0.9: TPF", "fixed_loss": "4 tokens/step: points lost",
                "vanilla_prefix_cost": "prefix cache costs vanilla", "vanilla_dual_cost": "dual cache costs vanilla",
                "fast_prefix_cost": "prefix cache costs Fast-dLLM", "fast_dual_cost": "dual cache costs Fast-dLLM",
                "long_accuracy": "2x window: vanilla", "long_gap": "2x window: points lost"}


def regime_curve(curve: list[dict]) -> list[str]:
    """Markdown: the regime figures (:mod:`tspd.eval.regime`) at each evaluation that logged them."""
    points = [c for c in curve if c.get("fast_tpf") is not None]
    if not points:
        return []
    cell = lambda k, v: "" if v is None else f"{v:.0%}" if k == "long_accuracy" else f"{v:.2f}" if k == "fast_tpf" \
        else f"{v:+.1f}"   # noqa: E731
    rows = ["## Regime figures during training (`tspd.eval.regime`; costs in points, no cache minus cached)", "",
            "| step | minutes | " + " | ".join(REGIME_NAMES.values()) + " |", "|---|---|" + "---|" * len(REGIME_NAMES)]
    rows += [f"| {c['step']} | {c['minutes']:.1f} | " + " | ".join(cell(k, c.get(k)) for k in REGIME_NAMES) + " |"
             for c in points]
    return rows + [""]


def _pct(x) -> str:
    return "" if x is None else f"{x:.0%}"


def probe_table(probed: dict) -> list[str]:
    """Markdown: the final record's teacher-forced probes and the counterfactual, with the rest of the
    answer visible and with everything after the span masked."""
    names = {"operand_question": "question numbers", "operand_result": "earlier results", "result*": "products",
             "result+": "sums", "result-": "differences", "result/": "quotients", "final": "final line"}
    rows = ["## Teacher-forced probes (`tspd.training.probes`: the reference solution in the window, one span masked)",
            "", f"On the first {probed['n']} test problems; the counterfactual on the {probed['cf_n']} of them whose "
            "first result is copied by a later line (that result altered, the copy masked: does the model write "
            "the altered value, or recompute the true one?).", "",
            "| probe | rest of the answer visible | everything after the span masked |", "|---|---|---|"]
    rows += [f"| {name} | {_pct(probed.get(probes.ROLE_COLUMNS[role]))} | {_pct(probed.get(probes.NEXT_COLUMNS[role]))} |"
             for role, name in names.items()]
    rows += [f"| counterfactual: copies the altered value | {_pct(probed.get('cf_copied'))} | "
             f"{_pct(probed.get('cf_next_copied'))} |",
             f"| counterfactual: recomputes the true value | {_pct(probed.get('cf_recomputed'))} | "
             f"{_pct(probed.get('cf_next_recomputed'))} |",
             f"| counterfactual, the {probed.get('cf_valid_n', '?')} whose altered value keeps every later line valid: "
             f"copies | {_pct(probed.get('cf_copied_valid'))} | {_pct(probed.get('cf_next_copied_valid'))} |",
             f"| final line, the whole window masked (one forward: `probes.one_pass`) | | "
             f"{_pct(probed.get('one_pass_final'))} |"]
    return rows + [""]


def final_probes(out: Path, cfg: LMTrainConfig) -> dict | None:
    """The probes of the saved checkpoint on the final evaluation's problems, also written to ``probes.json``."""
    from tspd.models.loading import load_model

    if cfg.final_eval_n <= 0:
        return None
    model = load_model(out, device=cfg.device)
    task = generated_task(cfg.task)
    problems = task.load_split("test", min(cfg.final_eval_n, task.SPLIT_SIZES["test"]))
    probed = {"n": len(problems), **probes.run_probes(model, model.tokenizer, problems, cfg.gen_length,
                                                      mask_id=model.special.mask)}
    (out / "probes.json").write_text(json.dumps(probed, indent=1) + "\n")
    return probed


def write_training_md(out: Path, info: dict) -> None:
    task = info.get("task", "arith")
    lines = [f"# {'tiny-arith' if task == 'arith' else out.name}: training record", "",
             "Embedded masked diffusion LM (LLaDA architecture) trained with the LLaDA SFT objective on "
             f"`tspd.eval.tasks.{task}` (synthetic GSM8K-style problems). Written by `python -m tspd train-lm`.", "",
             f"- status: {info['status']}",
             f"- command: `{info['command']}`",
             f"- git revision: {info['git']}",
             f"- device: {info['device']}",
             f"- torch: {torch.__version__}",
             f"- parameters: {info['params']:,}",
             f"- steps: {info['step']} (batch {info['batch_size']}, {info['tokens']:,} sequence positions)",
             f"- wall time of training: {info['train_seconds'] / 60:.1f} min "
             f"({info['tokens_per_s']:,.0f} positions/s; in-training evaluations excluded)",
             f"- final loss (mean of the last {info['loss_window']} steps): {info['loss']:.4f}", ""]
    if info.get("resumes"):
        lines[-1:-1] = [f"- resumed {info['resumes']} time(s) from `{STATE}`, last by `{info.get('resumed_by')}`"]
    if info.get("curve"):
        lines += ["## Learning curve (held-out, 1 token per step; teacher-forced probes with everything after the "
                  "span masked, `tspd.training.probes`)", "",
                  "| step | training minutes | loss | accuracy | n | " + " | ".join(CURVE_PROBES.values()) + " |",
                  "|---|---|---|---|---|" + "---|" * len(CURVE_PROBES)]
        lines += [f"| {c['step']} | {c['minutes']:.1f} | {c['loss']:.4f} | {c['accuracy']:.1%} | {c['n']} | " +
                  " | ".join(_pct(c.get(k)) for k in CURVE_PROBES) + " |" for c in info["curve"]]
        lines.append("")
        lines += regime_curve(info["curve"])
    if info.get("stopped_early"):
        lines += [f"Stopped early: {info['stopped_early']}.", ""]
    if info.get("probes"):
        lines += probe_table(info["probes"])
    if info.get("evals"):
        lines += [f"## Held-out accuracy (`tspd.eval.tasks.{info.get('task', 'arith')}` test split, gen_length "
                  f"{info['gen_length']}, block_length {info['block_length']})", ""]
        lines += sweep_table(info["evals"])
        lines.append("")
        vanilla = next((r for r in info["evals"] if r["policy"] == "vanilla" and (r.get("tokens_per_step") or 1) == 1
                        and r.get("lines")), None)
        if vanilla:
            names = {"*": "products", "+": "sums", "-": "differences", "/": "quotients"}
            shares = [f"{names[op]} {k / n:.0%} ({k}/{n})" for op, (k, n) in vanilla["lines"].items() if n]
            lines += ["Exact solution lines with 1 token per step (a reference line right at its index): "
                      + ", ".join(shares) + ".", ""]
            if vanilla.get("templates"):
                lines += ["Final answers right by template, 1 token per step: " + ", ".join(
                    f"{name} {k / n:.0%} ({k}/{n})" for name, (k, n) in vanilla["templates"].items()) + ".", ""]
    lines += ["## On a GPU", "",
              "A larger model trains in minutes on one GPU (not needed: the checkpoint above is the CPU run):", "",
              f"    {GPU_COMMAND}", "",
              "It rewrites this directory (weights in bf16, tokenizer, this file).", ""]
    (out / "TRAINING.md").write_text("\n".join(lines))


def save_checkpoint(model: LLaDAModelLM, out: Path) -> None:
    """Write the weights (bf16) to a temporary directory, then move the files into ``out``."""
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        save_model(model, tmp, dtype=torch.bfloat16)
        for name in ("config.json", "model.safetensors"):
            os.replace(Path(tmp, name), out / name)
            os.chmod(out / name, 0o644)   # the temporary directory's files are private


def save_state(out: Path, model, opt, info: dict, gen: torch.Generator) -> None:
    """Everything ``--resume`` needs, written atomically: fp32 weights, optimiser, counters, curve."""
    tmp = out / (STATE + ".tmp")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "info": info,
                "gen": gen.get_state(), "torch_rng": torch.get_rng_state()}, tmp)
    os.replace(tmp, out / STATE)


# ----------------------------------------------------------------------------------------------
# Main loop
# ----------------------------------------------------------------------------------------------
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


def _train(cfg: LMTrainConfig, log) -> dict:
    device = torch.device(cfg.device)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(cfg, out)
    torch.manual_seed(cfg.seed)
    net = LLaDAModelLM(model_config(cfg, tokenizer))
    init_weights(net)
    if cfg.init_from and not cfg.resume:
        chosen = warm_start(net, cfg.init_from, cfg.init_layers, tokenizer)
        log(f"warm start from {cfg.init_from}: embeddings, head and blocks {chosen}")
    net.to(device).train()
    model = LoadedModel(net, tokenizer, special_tokens(net.config, tokenizer), out)   # what evaluations decode
    mask_id = model.special.mask
    masking = Masking(cfg.masking, cfg.mask_mix, cfg.block_length)
    params = count_parameters(net)
    log(f"model: {params:,} parameters; device {device_name(device)}; torch {torch.__version__}")
    opt = make_optimizer(net, cfg, fused=device.type == "cuda")
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    info = {"status": "in progress", "command": command_line(cfg), "git": git_revision() or "unknown",
            "device": device_name(device), "params": params, "step": 0, "batch_size": cfg.batch_size,
            "tokens": 0, "train_seconds": 0.0, "tokens_per_s": 0.0, "loss": float("nan"), "loss_window": 0,
            "task": cfg.task, "gen_length": cfg.gen_length, "block_length": cfg.block_length, "evals": [], "curve": [],
            "recent": [], "resumes": 0}
    if cfg.resume:
        state = torch.load(out / STATE, map_location=device, weights_only=False)
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        torch.set_rng_state(state["torch_rng"])
        info.update({k: state["info"][k] for k in ("step", "tokens", "train_seconds", "curve", "recent", "resumes")})
        info.update(command=state["info"]["command"], resumes=info["resumes"] + 1, resumed_by=command_line(cfg),
                    git=f"{state['info']['git'].split(', resumed at')[0]}, resumed at {git_revision() or 'unknown'}")
        log(f"resumed at step {info['step']} ({info['train_seconds'] / 60:.1f} min of training)")
    # fixed windows give few shapes: compile each once rather than a slower dynamic-shape graph
    step_fn = torch.compile(net, dynamic=False if cfg.long_windows else None) if cfg.compile else net
    step, tokens, recent = info["step"], info["tokens"], info["recent"]
    stream = BatchStream(tokenizer, cfg, skip_batches=step)
    mode = "a" if cfg.resume else "w"
    if cfg.resume:
        upgrade_eval_log(out / "eval_log.csv")
    csv_file, eval_file = (out / "train_log.csv").open(mode, newline=""), (out / "eval_log.csv").open(mode, newline="")
    writer, eval_writer = csv.writer(csv_file), csv.writer(eval_file)
    if not cfg.resume:
        writer.writerow(["step", "minutes", "lr", "loss", "positions_per_s"])
        eval_writer.writerow(EVAL_COLUMNS)
    t_start = time.time() - info["train_seconds"]     # training time so far (evaluations excluded)
    last_save = last_log = time.time()
    last_eval = info["curve"][-1]["minutes"] * 60 if info["curve"] else 0.0
    tokens_at_log = tokens
    progress = 0.0
    try:
        while progress < 1.0:
            elapsed = time.time() - t_start
            progress = max(step / cfg.max_steps if cfg.max_steps else 0.0,
                           elapsed / (60 * cfg.minutes) if cfg.minutes else 0.0)
            if progress >= 1.0:
                break
            lr = cfg.lr * lr_factor(progress, cfg.warmup_frac, cfg.min_lr_frac)
            for g in opt.param_groups:
                g["lr"] = lr
            batch = next(stream).to(device)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
                loss = sft_loss(step_fn, batch, mask_id, cfg.eps, gen, masking, model.special.eos)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            step += 1
            tokens += batch.input_ids.numel()
            recent.append(loss.item())
            del recent[:-100]
            now = time.time()
            if step % cfg.log_every == 0 or step == 1 or now - last_log > 60:
                rate = (tokens - tokens_at_log) / max(now - last_log, 1e-9)
                log(f"step {step:6d} | {(now - t_start) / 60:6.2f} min | lr {lr:.2e} | "
                    f"loss {sum(recent[-cfg.log_every:]) / len(recent[-cfg.log_every:]):.4f} | {rate:,.0f} positions/s")
                writer.writerow([step, round((now - t_start) / 60, 3), f"{lr:.3e}", f"{recent[-1]:.4f}", round(rate)])
                csv_file.flush()
                last_log, tokens_at_log = now, tokens
            due = (cfg.eval_every and step % cfg.eval_every == 0) or \
                (cfg.eval_minutes and now - t_start - last_eval >= 60 * cfg.eval_minutes)
            if due:
                last_eval = now - t_start
                point = curve_point(model, cfg, step, last_eval / 60, sum(recent[-50:]) / len(recent[-50:]))
                info["curve"].append(point)
                eval_writer.writerow([point[k] if point[k] is not None else "" for k in EVAL_COLUMNS])
                eval_file.flush()
                log(f"step {step:6d} | eval 1 token/step: {point['accuracy']:.1%} of {point['n']} | probes " +
                    ", ".join(f"{k.removeprefix('probe_')} {point[k]:.0%}" for k in probes.COLUMNS if k != "cf_n"
                              if point[k] is not None))
                if cfg.regime:
                    log(f"step {step:6d} | regime " + ", ".join(f"{k} {point[k]:.2f}" for k in REGIME_COLUMNS
                                                                if point[k] is not None))
                t_start += time.time() - now   # evaluation time does not count against --minutes
                failed = gate_failed(cfg, point)
                if failed:
                    log(f"stopping: {failed}")
                    info["stopped_early"] = failed
                    break
            if time.time() - last_save > 60 * cfg.save_minutes:
                _record(net, opt, gen, out, info, step, tokens, time.time() - t_start, recent)
                last_save = time.time()
    finally:
        stream.close()
        csv_file.close()
        eval_file.close()
    train_seconds = time.time() - t_start
    _record(net, opt, gen, out, info, step, tokens, train_seconds, recent)
    log(f"trained {step} steps in {train_seconds / 60:.1f} min; final loss {info['loss']:.4f}; saved to {out}")
    info["status"] = "finished training; evaluating"
    write_training_md(out, info)
    info["evals"] = final_evaluation(out, cfg, log)
    info["probes"] = final_probes(out, cfg)
    info["status"] = "finished"
    write_training_md(out, info)
    (out / "evals.json").write_text(json.dumps(info["evals"], indent=1) + "\n")
    return info


EVAL_COLUMNS = ("step", "minutes", "loss", "accuracy", "n", *probes.COLUMNS, *REGIME_COLUMNS)   # eval_log.csv


def curve_point(model, cfg: LMTrainConfig, step: int, minutes: float, loss: float) -> dict:
    """One point of the learning curve: held-out accuracy (1 token per step) and the probes.

    The probes (:mod:`tspd.training.probes`) say what the model has learned before the accuracy moves:
    copying question numbers, reading its own earlier results, each operation, the final line.
    """
    task = generated_task(cfg.task)
    problems = task.load_split("test", cfg.eval_n)
    was_training = model.module.training
    model.module.eval()
    figures, rows = dict.fromkeys(REGIME_COLUMNS), None
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cfg.device == "cuda"):
        if cfg.regime:
            rc = RegimeConfig(n=cfg.eval_n, long_n=cfg.regime_long_n, long_windows=(2 * cfg.gen_length,),
                              batch=cfg.eval_batch)
            rows = regime_figures(model, task, problems, cfg.gen_length, cfg.block_length, rc)
            r, figures = rows["vanilla"], summary(rows, rc)
        else:
            r = evaluate(model, problems, cfg.gen_length, cfg.block_length, batch=cfg.eval_batch, task=task)
        probed = probes.run_probes(model, model.tokenizer, problems, cfg.gen_length, mask_id=model.special.mask)
    model.module.train(was_training)
    return {"step": step, "minutes": round(minutes, 4), "loss": round(loss, 4), "accuracy": r["accuracy"],
            "n": r["n"], **probed, **figures, "regime": rows}


def gate_failed(cfg: LMTrainConfig, point: dict) -> str | None:
    """Why a try stops early (it has not learned to copy question numbers by ``--gate-minutes``), or None."""
    copy = point.get("probe_operand_question")
    if cfg.gate_minutes and point["minutes"] >= cfg.gate_minutes and copy is not None and copy < cfg.gate_copy:
        return (f"after {point['minutes']:.0f} min the model copies {copy:.0%} of question numbers "
                f"(--gate-copy {cfg.gate_copy:.0%} by --gate-minutes {cfg.gate_minutes:g})")
    return None


def upgrade_eval_log(path: Path) -> None:
    """Rewrite an ``eval_log.csv`` begun by an older train-lm with today's columns (new cells empty), so a
    resumed run appends rows under the right header."""
    if not path.is_file():
        return
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        f.seek(0)
        header = next(csv.reader(f), [])
    if tuple(header) == EVAL_COLUMNS:
        return
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=EVAL_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def read_log(path: str | Path) -> list[dict]:
    """Rows of a ``train_log.csv`` / ``eval_log.csv`` as floats (None for an empty cell: a probe with no
    instance, or a column an older run did not write)."""
    with open(path, newline="") as f:
        return [{k: float(v) if v not in ("", None) else None for k, v in row.items()} for row in csv.DictReader(f)]


def _record(net: LLaDAModelLM, opt, gen, out: Path, info: dict, step: int, tokens: int, seconds: float,
            recent: list[float]) -> None:
    save_checkpoint(net, out)
    window = recent[-50:]
    info.update(step=step, tokens=tokens, train_seconds=seconds, tokens_per_s=tokens / max(seconds, 1e-9),
                loss=sum(window) / max(len(window), 1), loss_window=len(window), recent=recent)
    save_state(out, net, opt, info, gen)
    write_training_md(out, info)


def eval_only(cfg: LMTrainConfig, log=print) -> list[dict]:
    """Score an existing checkpoint and append the table to its TRAINING.md (and ``evals.json``)."""
    out = Path(cfg.out)
    with torch_settings(cfg):
        evals = final_evaluation(out, cfg, log)
        probed = final_probes(out, cfg)
    with (out / "TRAINING.md").open("a") as f:
        f.write(f"\n## Re-evaluation ({time.strftime('%Y-%m-%d %H:%M')}, git {git_revision() or 'unknown'}, "
                f"{device_name(torch.device(cfg.device))})\n\n" + "\n".join(sweep_table(evals)) + "\n")
        if probed:
            f.write("\n" + "\n".join(probe_table(probed)))
    (out / "evals.json").write_text(json.dumps(evals, indent=1) + "\n")
    return evals


def main(args: argparse.Namespace) -> int:
    cfg = from_args(LMTrainConfig, args)
    if getattr(args, "eval_only", False):
        eval_only(cfg)
        return 0
    try:
        train(cfg, log=lambda s: print(s, flush=True))
    except ValueError as e:   # bad options: one line, no traceback
        print(f"train-lm: {e}", file=sys.stderr)
        return 2
    return 0


__all__ = ["LMTrainConfig", "read_log", "Batch", "make_batch", "encode_answer", "sft_loss", "lr_factor", "train",
           "evaluate", "model_config", "init_weights", "add_arguments", "main"]
