"""The objective of ``train-lm``: LLaDA's SFT loss (Nie et al., 2025), whichever network it trains
(:mod:`tspd.training.lm.arch`).

Objective (Sec. 2.3 / Eq. 5): a sequence is ``prompt + answer``, the answer padded with EOS up to the
window. Each sample draws ``t ~ U(eps, 1]`` and its answer positions (EOS padding included) are masked
with probability ``t`` (or as :mod:`tspd.training.masking` says); the prompt is never masked. The loss is
the cross-entropy of the masked positions, each weighted by ``1/t``, summed and divided by the answer
region's length, averaged over the batch::

    L = E_b [ 1/L_ans * sum_{i in answer, masked} -log p(x_i | x_t) / t ]

The times ``t`` of a batch are stratified (one draw in each of ``B`` equal slices of ``(eps, 1]``, in a
random order), which keeps the expectation and lowers the variance of the 1/t-weighted loss. Optimiser:
AdamW, linear warmup then cosine decay, gradient clipping at 1.0.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from tspd.training.lm.arch import decays
from tspd.training.lm.config import LMTrainConfig
from tspd.training.lm.data import Batch
from tspd.training.masking import Masking, mask_answer


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def sft_loss(model, batch: Batch, mask_id: int, eps: float = 1e-3,
             generator: torch.Generator | None = None, masking: Masking = Masking(),
             eos_id: int | None = None, t_draw: str = "stratified") -> torch.Tensor:
    """LLaDA SFT loss (Eq. 5): masked-token CE weighted by 1/t over the answer region / its length.

    ``masking`` says which positions are masked and scored (:mod:`tspd.training.masking`); the default
    is LLaDA's uniform masking, where every masked position is scored. ``t_draw``: the batch's times
    ``stratified`` (:func:`stratified_uniform`) or ``independent`` (one plain uniform draw each).
    """
    ids, P = batch.input_ids, batch.prompt_width
    answer = ids[:, P:]
    B, L = answer.shape
    u = stratified_uniform(B, ids.device, generator) if t_draw == "stratified" else \
        torch.rand(B, 1, device=ids.device, generator=generator)
    t = eps + (1 - eps) * u   # t in (eps, 1]
    masked, scored, ratio = mask_answer(answer, t, eos_id, masking, generator, batch.clean, batch.until)
    logits = model(noised(ids, P, masked, mask_id), attention_mask=batch.attention_mask,
                   position_ids=batch.position_ids, logits_from=P)
    return eq5(logits, answer, scored, ratio, L)


def noised(ids: torch.Tensor, prompt_width: int, masked: torch.Tensor, mask_id: int) -> torch.Tensor:
    """The sequence with the answer positions ``masked`` ``[B, L]`` replaced by the mask token (the prompt kept)."""
    answer = ids[:, prompt_width:]
    return torch.cat([ids[:, :prompt_width], torch.where(masked, torch.full_like(answer, mask_id), answer)], 1)


def eq5(logits: torch.Tensor, targets: torch.Tensor, scored: torch.Tensor, ratio: torch.Tensor,
        length: int) -> torch.Tensor:
    """Eq. 5's reduction: the cross-entropy of the ``scored`` positions, each divided by its row's ``ratio`` (t),
    summed per row over the answer's ``length`` and averaged over the batch."""
    B, T = targets.shape
    ce = F.cross_entropy(logits.float().reshape(B * T, -1), targets.reshape(-1), reduction="none").view(B, T)
    return ((ce * scored / ratio).sum(-1) / length).mean()


def ar_loss(model, batch: Batch) -> torch.Tensor:
    """Next-token cross-entropy under causal attention over the answer region (EOS fill included): Dream's
    autoregressive start (Ye et al., 2025), trained by the network Dream's diffusion training then continues
    (``--objective ar --arch dream``). Dream's logits are shifted (row ``j`` comes from the output at ``j - 1``),
    so with a causal mask row ``j`` predicts token ``j`` from the tokens before it."""
    ids, P = batch.input_ids, batch.prompt_width
    T = ids.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
    mask = causal[None, None] & batch.attention_mask.bool()[:, None, None, :]
    logits = model(ids, attention_mask=mask, position_ids=batch.position_ids, logits_from=P)
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids[:, P:].reshape(-1))


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
    decay = [p for n, p in model.named_parameters() if decays(n, p)]
    rest = [p for n, p in model.named_parameters() if not decays(n, p)]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95), fused=fused)
