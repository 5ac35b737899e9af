"""The ``tspd`` model of lm-evaluation-harness (``lm_eval --model tspd``; needs ``tspd[lmeval]``).

Importing this module registers the model (lm-eval 0.4 finds models only in code it has imported:
``python -m tspd.lmeval`` imports it, then runs lm-eval's own command line).

- ``generate_until``: prompts -> :func:`tspd.generate` with the :class:`~tspd.decoding.config.DecodeConfig`
  of ``--model_args`` (:mod:`tspd.eval.lmeval.settings`), ``--batch_size`` prompts per call, in lm-eval's
  request order (the same batches as ``python -m tspd eval --batch-size`` on the same problems);
  each text is cut at the request's ``until`` strings (and at EOS / EoT). The task's ``max_gen_toks`` and
  sampling settings are not used: the diffusion window and the temperature are the decoding's own.
- ``loglikelihood``: LLaDA's Monte-Carlo estimate (:mod:`tspd.eval.lmeval.likelihood`), ``is_greedy`` by
  LLaDA's greedy check (``check_greedy=false`` skips it and reports False). With ``eos_fill`` (the default
  for checkpoints trained by ``train-lm``) the scored continuation is followed by EOS up to ``gen_length``.
- ``loglikelihood_rolling``: refused in one line (no left-to-right likelihood to roll).

What lm-eval's output then holds: every response is a :class:`Completion`, a ``str`` that also carries
its record (``nfe``, ``seconds``, ``gen_tokens``, batch bookkeeping as the project harness's rows); the
shipped tasks (``tspd_arith``, ``tspd_chain``, ``tspd_gsm8k``) turn it into per-sample metrics ``nfe`` and
``tokens_per_second`` beside the accuracy (samples file and results table). For any task,
``results["config"]["tspd"]`` (:meth:`TSPDLM.get_model_info`) holds the decoding and the run's NFE, TPF
and throughput (the harness's definitions: :func:`tspd.eval.results.tpf`, :func:`tspd.eval.results.throughput`).
"""
from __future__ import annotations

import secrets
import time
import warnings

import torch
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from tspd.eval.lmeval.likelihood import encode_pair, greedy_suffix, mc_loglikelihood
from tspd.eval.lmeval.settings import ModelArgs, parse_model_args
from tspd.eval.results import throughput, tpf
from tspd.eval.shard import Shard
from tspd.tasks.registry import cut_at_stop, render_prompt, use_chat
from tspd.validate import UsageError, check_fits, max_positions


class Completion(str):
    """A generated text (what lm-eval stores and grades) with its decoding record in ``.tspd``."""

    def __new__(cls, text: str = "", record: dict | None = None):
        obj = super().__new__(cls, text)
        obj.tspd = dict(record or {})
        return obj

    def __reduce__(self):   # lm-eval's --use_cache pickles responses
        return (Completion, (str(self), self.tspd))


@register_model("tspd")
class TSPDLM(LM):
    """A tspd checkpoint decoded by the package's generation loop; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__()
        device, batch_size = kwargs.pop("device", None), kwargs.pop("batch_size", None)
        kwargs.pop("max_batch_size", None)
        self.settings: ModelArgs = parse_model_args(kwargs, device=device, batch_size=batch_size)
        shard = Shard.from_env()            # torchrun / accelerate launch: lm-eval splits the documents
        self._rank, self._world_size = shard.rank, shard.world
        if shard.active:
            import torch.distributed as dist
            if not dist.is_initialized():   # gloo: works for CPU and GPU processes alike (tspd.eval.shard)
                dist.init_process_group("gloo", rank=shard.rank, world_size=shard.world)
        from tspd.models.loading import load_model
        s = self.settings
        self.model = load_model(s.checkpoint or s.pretrained, device=s.device,
                                dtype=None if s.dtype == "auto" else s.dtype)
        self.tokenizer = self.model.tokenizer
        if self.tokenizer is None:
            raise UsageError(f"{s.pretrained} has no tokenizer files: lm-eval sends text")
        wanted = {"auto": None, "on": True, "off": False}[s.chat]
        if wanted and not getattr(self.tokenizer, "chat_template", None):
            raise UsageError(f"chat=on, but {s.pretrained} has no chat template: use chat=off")
        self.chat = use_chat(self.tokenizer, wanted)
        self._templated = False             # lm-eval's --apply_chat_template rendered the prompts
        self._device = self.model.device
        special = self.model.special
        self._skip_ids = set(special.stop_ids()) | {special.pad, special.mask}
        self._session = secrets.token_hex(4)
        self._batches = 0
        self._rows: list[dict] = []         # one per generated sample (this process)
        self._all_rows: list[dict] | None = None   # every process's, gathered on rank 0
        self._ll = {"requests": 0, "forwards": 0, "seconds": 0.0}
        self._warned: set[str] = set()

    # ---- generation -----------------------------------------------------------------------------
    def _prompt(self, context: str) -> str:
        return render_prompt(context, self.tokenizer, True) if self.chat and not self._templated else context

    def _check_gen_kwargs(self, gen_kwargs: dict) -> list[str]:
        until = gen_kwargs.get("until") or []
        until = [until] if isinstance(until, str) else list(until)
        sampling = gen_kwargs.get("do_sample") or float(gen_kwargs.get("temperature") or 0) > 0
        if sampling and self.settings.decode.temperature == 0 and "sampling" not in self._warned:
            self._warned.add("sampling")
            warnings.warn("the task asks for sampling; --model tspd decodes with the temperature of its "
                          "--model_args (0: greedy)")
        return until

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        from tqdm import tqdm

        from tspd.decoding.loop import generate
        s, out = self.settings, []
        B = s.batch_size
        bar = tqdm(total=len(requests), desc="tspd generate_until", disable=disable_tqdm or self.rank != 0)
        for k in range(0, len(requests), B):
            batch = requests[k:k + B]
            prompts = [self._prompt(r.args[0]) for r in batch]
            gen = generate(self.model, prompts, s.decode, add_special_tokens=s.add_bos_token,
                           truncate_prompt=s.truncate_prompt)
            rows = gen.token_ids.tolist()
            n, tag = len(batch), f"{self._session}:{self._batches}"
            for i, r in enumerate(batch):
                text = cut_at_stop(gen.texts[i], self._check_gen_kwargs(r.args[1] if len(r.args) > 1 else {}))
                record = {"nfe": int(gen.nfe_per_sample[i]), "seconds": round(gen.seconds / n, 6),
                          "gen_tokens": sum(1 for t in rows[i] if t not in self._skip_ids),
                          "gen_length": len(rows[i]), "batch": tag, "batch_size": n,
                          "batch_seconds": round(gen.seconds, 6), "warmup": self._batches == 0}
                if gen.truncated and gen.truncated[i]:
                    record["prompt_truncated"] = True
                self._rows.append(record)
                out.append(Completion(text, record))
                self.cache_hook.add_partial("generate_until", r.args, out[-1])
            self._batches += 1
            bar.update(n)
        bar.close()
        self._all_rows = self._gather_rows()
        return out

    def _gather_rows(self) -> list[dict] | None:
        if self.world_size == 1:
            return list(self._rows)
        parts = self.gather_object(self._rows, dst=0)
        return [r for part in parts for r in part] if parts is not None else None

    # ---- likelihood -----------------------------------------------------------------------------
    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        from tqdm import tqdm
        s, out = self.settings, []
        limit = max_positions(self.model.config)
        t0 = time.perf_counter()
        for r in tqdm(requests, desc="tspd loglikelihood", disable=disable_tqdm or self.rank != 0):
            context, continuation = r.args[0], r.args[1]
            prefix, target = encode_pair(self.tokenizer, self._prompt(context) if context else context,
                                         continuation, s.add_bos_token)
            if s.eos_fill:                  # the window as generation fills it: continuation, then EOS
                target += [self.model.special.eos] * max(0, s.decode.gen_length - len(target))
            if limit is not None and len(prefix) + len(target) > limit:
                if not s.truncate_prompt:
                    check_fits(len(prefix), len(target), limit)
                prefix = prefix[max(0, len(prefix) + len(target) - limit):]
            ll, fwd = mc_loglikelihood(self.model, prefix, target, s.mc_num, s.mc_batch, s.mc_seed)
            greedy, gfwd = greedy_suffix(self.model, prefix, target) if s.check_greedy else (False, 0)
            self._ll["requests"] += 1
            self._ll["forwards"] += fwd + gfwd
            out.append((ll, bool(greedy)))
            self.cache_hook.add_partial("loglikelihood", (context, continuation), out[-1])
        self._ll["seconds"] += time.perf_counter() - t0
        return out

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise UsageError("--model tspd has no loglikelihood_rolling (perplexity tasks): a masked diffusion LM "
                         "has no left-to-right likelihood to roll; use generate_until or loglikelihood tasks")

    # ---- chat templates (lm-eval's --apply_chat_template) -----------------------------------------
    @property
    def tokenizer_name(self) -> str:
        return str(self.model.name_or_path).replace("/", "__")

    def chat_template(self, chat_template=False) -> str | None:
        return getattr(self.tokenizer, "chat_template", None) or ""

    def apply_chat_template(self, chat_history: list[dict], add_generation_prompt: bool = True) -> str:
        if not getattr(self.tokenizer, "chat_template", None):
            raise UsageError(f"--apply_chat_template: {self.settings.pretrained} has no chat template")
        self._templated = True
        return self.tokenizer.apply_chat_template(chat_history, tokenize=False,
                                                  add_generation_prompt=add_generation_prompt,
                                                  continue_final_message=not add_generation_prompt)

    # ---- what lm-eval's results record (results["config"]) ---------------------------------------
    def get_model_info(self) -> dict:
        s = self.settings
        rows = self._all_rows if self._all_rows is not None else self._rows
        gen = {"requests": len(rows), "processes": self.world_size}
        if rows:
            gen["nfe_mean"] = sum(r["nfe"] for r in rows) / len(rows)
            gen["tpf"] = tpf(rows)
            gen["forwards"] = sum(max(r["nfe"] for r in rows if r["batch"] == b) for b in {r["batch"] for r in rows})
            gen.update(throughput(rows))
            gen["tokens_per_second"] = gen.pop("tps")
            gen["truncated_prompts"] = sum(bool(r.get("prompt_truncated")) for r in rows)
        ll = {"mc_num": s.mc_num, "mc_batch": s.mc_batch, "mc_seed": s.mc_seed, "check_greedy": s.check_greedy,
              "eos_fill": s.eos_fill, **self._ll}
        params = sum(p.numel() for p in self.model.parameters())
        return {"model_num_parameters": params, "model_dtype": str(self.model.dtype),
                "tspd": {"pretrained": s.pretrained, "device": str(self._device), "batch_size": s.batch_size,
                         "chat": self.chat or self._templated, "add_bos_token": s.add_bos_token,
                         "decode_config": s.decode.to_dict(), "generate_until": gen, "loglikelihood": ll}}

    # ---- several processes (torchrun / accelerate launch) ---------------------------------------
    def all_gather(self, tensor):
        if self.world_size == 1:
            return tensor
        import torch.distributed as dist
        t = tensor.detach().cpu()
        parts = [torch.zeros_like(t) for _ in range(self.world_size)]
        dist.all_gather(parts, t)
        return (torch.stack(parts) if t.dim() == 0 else torch.cat(parts)).to(tensor.device)

    def gather_object(self, obj, dst: int = 0):
        if self.world_size == 1:
            return [obj]
        import torch.distributed as dist
        out = [None] * self.world_size if self.rank == dst else None
        dist.gather_object(obj, out, dst=dst)
        return out

    def barrier(self) -> None:
        if self.world_size > 1:
            import torch.distributed as dist
            dist.barrier()
