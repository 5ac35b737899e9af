"""Which network ``train-lm`` builds (``--arch``): the same task, tokenizer and objective over three layouts,
so the paper's Table 2 (TSPD + CE on Dream-7B and LLaDA-MoE-7B-A1B beside LLaDA-8B) can be tried in kind.

- ``llada``: LLaDA's own layout (:mod:`tspd.models.llada`, ``model.transformer.blocks.*``).
- ``dream``: Dream's (:mod:`tspd.models.dream`): Qwen2 names and ``config.json``, q/k/v with bias, and the
  shifted logits (position ``i``'s distribution is the output at ``i - 1``). ``DreamModelLM.forward`` returns
  them shifted back, so the LLaDA objective trains it unchanged and the checkpoint loads as a Dream directory.
  Dream's own recipe starts from an autoregressive model: ``--objective ar`` trains the same network as one
  (causal mask, next token: :func:`tspd.training.lm.objective.ar_loss`), and a diffusion run ``--init-from`` it.
- ``llada-moe``: LLaDA-MoE's (:mod:`tspd.models.llada_moe`): every MLP a softmax-routed top-k mixture of SwiGLU
  experts, sized so the active MLP is ``--mlp-hidden`` wide (``--experts`` of ``mlp_hidden / --active-experts``
  each), plus the router's load-balancing term (:class:`RouterBalance`, as OLMoE and LLaDA-MoE train with).

Each checkpoint is saved in its layout's own format (``config.json`` with the layout's field names and
``model_type``), so ``tspd.models.loading`` opens it as it would a downloaded one.
"""
from __future__ import annotations

import torch
from torch import nn

from tspd.tasks.generated import generated_task
from tspd.models.config import LLaDAConfig
from tspd.models.dream import DreamConfig, DreamModelLM
from tspd.models.llada import LLaDAModelLM
from tspd.models.llada_moe import LLaDAMoEConfig, LLaDAMoEModelLM, SparseMoE
from tspd.training.lm.config import LMTrainConfig, windows

NETWORKS = {"llada": LLaDAModelLM, "dream": DreamModelLM, "llada-moe": LLaDAMoEModelLM}
RESIDUAL_OUT = ("attn_out.weight", "ff_out.weight", "o_proj.weight", "down_proj.weight")   # scaled at init
EMBEDDINGS = ("wte", "embed_tokens")   # no weight decay


def model_config(cfg: LMTrainConfig, tokenizer):
    """The ``--arch`` network's config: vocabulary and special ids from the tokenizer, the task in ``tspd_task``;
    its longest sequence leaves room for a prompt before twice the longest window (paper Table 3)."""
    task = generated_task(cfg.task)
    longest = max([cfg.gen_length] + [w for w, _ in windows(cfg)])
    special = dict(mask_token_id=tokenizer.mask_token_id, eos_token_id=tokenizer.eos_token_id,
                   pad_token_id=tokenizer.pad_token_id)
    extra = {"tspd_task": {"name": task.__name__, "fingerprint": task.fingerprint(),
                           "prompt": "the question text, no template",
                           "gen_length": cfg.gen_length, "block_length": cfg.block_length}}
    if cfg.arch == "llada":
        return LLaDAConfig(d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                           mlp_hidden_size=cfg.mlp_hidden, vocab_size=len(tokenizer),
                           max_sequence_length=max(1024, 4 * longest), rope_theta=10000.0, extra=extra, **special)
    shape = dict(hidden_size=cfg.d_model, num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads,
                 num_key_value_heads=cfg.n_heads,   # written out, as the released configs do (no GQA at this size)
                 vocab_size=len(tokenizer), max_position_embeddings=max(1024, 4 * longest), rope_theta=10000.0,
                 extra=extra, **special)
    if cfg.arch == "dream":
        out = DreamConfig(intermediate_size=cfg.mlp_hidden, **shape)
    else:
        out = LLaDAMoEConfig(num_experts=cfg.experts, num_experts_per_tok=cfg.active_experts,
                             expert_intermediate_size=cfg.mlp_hidden // cfg.active_experts,
                             qk_layernorm=True, **shape)   # per-head q/k RMSNorm, as LLaDA-MoE-7B's config has
    out.validate()
    return out


def build(cfg: LMTrainConfig, tokenizer) -> nn.Module:
    """A freshly initialised ``--arch`` network (:func:`init_weights`)."""
    net = NETWORKS[cfg.arch](model_config(cfg, tokenizer))
    init_weights(net)
    return net


def init_weights(model: nn.Module) -> None:
    """GPT-2 style: N(0, 0.02) everywhere, residual output projections scaled by 1/sqrt(2 n_layers)."""
    std = 0.02
    for name, p in model.named_parameters():
        if p.dim() < 2:
            continue                                  # RMSNorm weights stay 1 (and the MoE's expert bias 0)
        residual = (".blocks." in name or ".layers." in name) and name.endswith(RESIDUAL_OUT)
        scale = 1 / (2 * model.config.n_layers) ** 0.5 if residual else 1.0
        torch.nn.init.normal_(p, mean=0.0, std=std * scale)


def decays(name: str, p: torch.Tensor) -> bool:
    """Weight decay on matrices only, not on norms, biases and embeddings."""
    return p.dim() >= 2 and not any(e in name for e in EMBEDDINGS)


class RouterBalance:
    """The MoE router's load-balancing term (Switch Transformer; OLMoE and LLaDA-MoE train with it):
    ``E * sum_e f_e P_e`` per MoE layer, averaged over layers, where ``f_e`` is the share of routed slots that go
    to expert ``e`` and ``P_e`` its mean router probability. It is smallest when the experts share the load.

    Forward hooks on the routers keep their logits while the network trains; :meth:`take` returns the term for
    the forwards since the last call (0 for a network without experts) and forgets them.
    """

    def __init__(self, net: nn.Module):
        self.logits: list[torch.Tensor] = []
        self.moes = [m for m in net.modules() if isinstance(m, SparseMoE)]
        for moe in self.moes:
            moe.gate.register_forward_hook(self._keep)

    def _keep(self, module, args, out) -> None:
        if module.training:
            self.logits.append(out)

    def take(self) -> torch.Tensor | float:
        if not self.logits:
            return 0.0
        terms = []
        for logits in self.logits:
            moe = self.moes[0]
            probs = logits.reshape(-1, logits.shape[-1]).float().softmax(-1)
            chosen = probs.topk(moe.top_k, dim=-1).indices
            share = torch.zeros_like(probs[0]).index_add_(0, chosen.reshape(-1), torch.ones(chosen.numel(),
                                                                                            device=probs.device))
            terms.append(probs.shape[-1] * (share / chosen.numel() * probs.mean(0)).sum())
        self.logits = []
        return torch.stack(terms).mean()


__all__ = ["NETWORKS", "model_config", "build", "init_weights", "decays", "RouterBalance"]
