"""``train-lm``'s settings: one :class:`LMTrainConfig`, the choices of its command-line options (:data:`CHOICES`; the
options themselves: :mod:`tspd.commands.train_lm`) and the exact command line.

The window defaults to the task's own (``arith`` 64, ``chain`` 256, both in blocks of 32). ``--long-windows``
puts a share of the batches in longer windows, the answer EOS-filled to their end, as LLaDA-Instruct pads
its answers, so that the model still answers when decoded in a longer window (paper Table 3).
"""
from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass

from tspd.provenance import relative_arg
from tspd.tasks.generated import GENERATED, MIX_ONLY, generated_task
from tspd.training.masking import SCHEMES
from tspd.validate import check_device


ARCHS = ("llada", "dream", "llada-moe")   # the layouts train-lm builds (tspd.training.lm.arch)
OBJECTIVES = ("diffusion", "ar")          # tspd.training.lm.objective: sft_loss, ar_loss


@dataclass
class LMTrainConfig:
    out: str
    task: str = "arith"            # the generated task trained on: arith (3-4 short lines) | chain (5-10 lines, 256 window)
    arch: str = "llada"            # llada | dream (Qwen2 layout, shifted logits) | llada-moe (routed experts): paper Table 2
    objective: str = "diffusion"   # diffusion (LLaDA's SFT loss) | ar (causal attention, next token: Dream's autoregressive start)
    d_model: int = 128             # width (the task, not the model size, is the lever on a CPU)
    n_layers: int = 4              # transformer blocks
    n_heads: int = 4               # attention heads
    mlp_hidden: int = 352          # SwiGLU width 2.75 x d_model: 0.83M parameters, trainable on a 2-core CPU
    experts: int = 8               # llada-moe: experts per layer, each mlp_hidden / active_experts wide
    active_experts: int = 2        # llada-moe: experts a token is routed to (its active MLP is mlp_hidden wide)
    router_aux: float = 0.01       # llada-moe: weight of the router's load-balancing term (OLMoE's 0.01)
    gen_length: int | None = None  # answer region = the inference window (None: the task's own: arith 64, chain 256)
    block_length: int | None = None  # semi-AR block of evaluation and block masking (None: the task's own, 32)
    long_windows: str = ""         # share of batches in longer windows, e.g. 512:0.15,1024:0.05 (answers EOS-filled)
    mix_tasks: str = ""            # other tasks' share of batches at their own windows, e.g. arith:0.3 (an easy task's skills)
    tokenizer: str = "bpe"         # bpe: subword, trained on the task's text (digits one per token) | char
    masking: str = "uniform"       # uniform (LLaDA) | prefix | block | causal (tspd.training.masking)
    mask_mix: float = 0.0          # share of each batch masked by --masking; the rest uniform
    cache_mix: float = 0.0         # share of steps that train one block as Fast-dLLM's caches show it (stale keys outside it; tspd.training.lm.cached_view)
    alter_frac: float = 0.0        # share of problems with line 1's result altered and carried through (read what is written)
    alter_any: float = 0.0         # share of those altered to any value, learned only up to the line it breaks (copy anyway)
    swap_frac: float = 0.0         # share of problems with + and * operands in random order (two right answers a line)
    batch_size: int = 64           # sequences per optimizer step
    lr: float = 1e-3               # peak AdamW rate (at 3e-3 a 1M model misses dependencies between answer tokens)
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
    regime: bool = False           # also log the regime figures at each evaluation (tspd.measures.regime: TPF, caches, 2x window)
    regime_long_n: int = 32        # problems for the 2x window's vanilla figure (a forward per token: costly; 0: none)
    gate_minutes: float = 0.0      # stop a run that cannot copy question numbers by then (0 = never)
    gate_copy: float = 0.5         # question-number probe a run needs by --gate-minutes
    final_eval_n: int = 500        # test problems for the final numbers (0 = skip)
    eval_batch: int = 500          # prompts per generate() call
    data_workers: int = 0          # processes building batches, same batches (a GPU's step outruns one thread); 0: a thread
    batch_seeds: bool = False      # draw each batch's problems from a seed of its own, so workers split the drawing and a resume skips at once (off: one stream for all batches)
    save_minutes: float = 5.0      # checkpoint period, so an interrupted run leaves a model
    log_every: int = 25            # steps between log lines (and at least one a minute)
    prompt_multiple: int = 8       # prompt width rounded up to this: few distinct shapes for compile
    threads: int | None = None     # torch CPU threads (None = torch's default)
    resume: bool = False           # continue from --out's train_state.pt (same data stream and schedule)
    init_from: str | None = None   # warm start from this checkpoint: its tokenizer, embeddings, head and blocks
    init_layers: str | None = None  # which of --init-from's blocks, in order, e.g. 0,3 (default: its first --n-layers)

    def __post_init__(self):   # the window defaults to the task's own
        if self.task in MIX_ONLY:
            raise ValueError(f"--task {self.task}: a training mixture only (--mix-tasks {self.task}:SHARE), nothing to grade")
        task = generated_task(self.task)
        if self.gen_length is None:
            self.gen_length = task.GEN_LENGTH
        if self.block_length is None:
            self.block_length = task.BLOCK_LENGTH
        if self.data_workers < 0:
            raise ValueError(f"--data-workers must be >= 0 (0: one background thread), got {self.data_workers}")
        for option, value in (("--batch-size", self.batch_size), ("--lr", self.lr), ("--minutes", self.minutes),
                              ("--max-steps", self.max_steps)):
            if value is not None and value <= 0:
                raise ValueError(f"{option} must be positive, got {value}")
        if not 0.0 <= self.cache_mix <= 1.0 or (self.cache_mix and self.objective != "diffusion"):
            raise ValueError(f"--cache-mix must be in [0, 1] (diffusion objective only), got {self.cache_mix}")
        if self.cache_mix and self.arch == "dream":   # its view is built for unshifted logits; Dream's are shifted
            raise ValueError("--cache-mix is built for LLaDA's and LLaDA-MoE's layouts, not --arch dream's shifted logits")
        if self.arch not in ARCHS:
            raise ValueError(f"--arch {self.arch}: one of {', '.join(ARCHS)}")
        if self.objective not in OBJECTIVES or (self.objective == "ar" and self.arch != "dream"):
            raise ValueError(f"--objective {self.objective}: diffusion, or ar with --arch dream (its logits are "
                             f"shifted, so a causal mask makes it a next-token model)")
        if self.arch == "llada-moe" and not (0 < self.active_experts <= self.experts
                                             and self.mlp_hidden % self.active_experts == 0):
            raise ValueError(f"--arch llada-moe needs 0 < --active-experts <= --experts and --mlp-hidden a multiple of "
                             f"--active-experts, got {self.active_experts}, {self.experts}, {self.mlp_hidden}")
        check_device(self.device)   # a GPU run asked for where torch sees none: one line, before anything runs
        windows(self)          # a malformed --long-windows fails here, before anything runs
        mixes(self)            # so does a malformed --mix-tasks


def windows(cfg: "LMTrainConfig") -> list[tuple[int, float]]:
    """``--long-windows`` as ``[(window, share)]``: each window a multiple of ``gen_length``, shares < 1 in all."""
    out = _shares(cfg.long_windows, "--long-windows", "WINDOW:SHARE (e.g. 512:0.15)", int)
    for w, share in out:
        if w <= cfg.gen_length or w % cfg.block_length or not 0 < share < 1:
            raise ValueError(f"--long-windows: {w}:{share} needs a window above {cfg.gen_length}, a multiple of "
                             f"{cfg.block_length}, and a share in (0, 1)")
    return _leaving_some(out, "--long-windows", "at --gen-length")


def mixes(cfg: "LMTrainConfig") -> list[tuple[str, float]]:
    """``--mix-tasks`` as ``[(task, share)]``: other generated tasks, shares < 1 in all (the rest is ``--task``)."""
    out = _shares(cfg.mix_tasks, "--mix-tasks", "TASK:SHARE (e.g. arith:0.3)", str)
    for name, share in out:
        if name not in GENERATED or name == cfg.task or not 0 < share < 1:
            raise ValueError(f"--mix-tasks: {name}:{share} needs a generated task other than {cfg.task!r} "
                             f"(known: {', '.join(GENERATED)}) and a share in (0, 1)")
    return _leaving_some(out, "--mix-tasks", "to --task")


def tasks(cfg: "LMTrainConfig") -> list[str]:
    """Every task a run draws problems from: ``--task``, then those of ``--mix-tasks``."""
    return [cfg.task] + [name for name, _ in mixes(cfg)]


def _shares(text: str, option: str, form: str, value) -> list[tuple]:
    """A comma-separated ``VALUE:SHARE`` option as ``[(value(VALUE), SHARE)]``."""
    out = []
    for part in filter(None, text.replace(" ", "").split(",")):
        try:
            v, share = part.split(":")
            out.append((value(v), float(share)))
        except ValueError:
            raise ValueError(f"{option}: {part!r} is not {form}") from None
    return out


def _leaving_some(out: list[tuple], option: str, rest: str) -> list[tuple]:
    """``out``, whose shares must leave some batches ``rest`` (the run's own window or task)."""
    if sum(s for _, s in out) >= 1:
        raise ValueError(f"{option}: the shares must leave some batches {rest}")
    return out


# the allowed values of train-lm's options (python -m tspd train-lm, tspd.commands.train_lm)
CHOICES = {"task": [t for t in GENERATED if t not in MIX_ONLY], "arch": list(ARCHS), "objective": list(OBJECTIVES), "device": ["cpu", "cuda"], "tokenizer": ["bpe", "char"], "masking": list(SCHEMES)}


def command_line(cfg: LMTrainConfig) -> str:
    """The exact command that reproduces this run (every option spelt out, paths inside the repository relative to it)."""
    parts = ["python", "-m", "tspd", "train-lm"]
    for k, v in asdict(cfg).items():
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            parts += [flag] if v else []
        elif v is not None:
            parts += [flag, relative_arg(str(v))]
    return shlex.join(parts)
