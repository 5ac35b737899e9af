"""Stage 1: collect decoding traces for the learned controllers (paper Section 4.1, Appendix A.4).

For each batch of prompts: decode with vanilla LLaDA to get the reference answer, then decode again
with the Extremely Greedy Parallel oracle (:class:`tspd.decoding.controllers.egp.EGP`), which reproduces that
answer in far fewer steps. A :class:`Recorder` wrapped around the controller stores, at every step and
every position of the current block, exactly what a controller sees at inference time:

    conf      the model's top-1 confidence          ce_conf  CE's look-ahead confidence (Section 3.3)
    entropy   predictive entropy                    u        CE's forecast uncertainty
    ewma      EWMA confidence (alpha 0.25)          momentum its one-step difference

(the relative position phi is implied by the column), plus the label of Appendix A.4,
y = [current argmax == final token], and whether the position was still masked. Nothing of the
vocabulary-sized logits is kept. Steps are grouped into per-(prompt, block) sequences, the unit over
which TSPD's LSTM runs (its hidden state is reset at every block).

``--controller vanilla`` records standard parallel decoding instead of EGP, ``mixed`` alternates the two
batch by batch (the paper's Table 12 compares the three).

    python -m tspd collect-traces --model tiny-arith --prompts arith-traces --n 1000 --out traces.pt

(the command: :mod:`tspd.commands.collect_traces`)

``--prompts`` left out: the model's own task's traces split (``arith-traces`` for ``tiny-arith``,
``chain-traces`` for a checkpoint trained on ``chain``; :func:`own_traces`).
"""
from __future__ import annotations

import gzip
import io
from pathlib import Path

import torch

from tspd.decoding.config import DecodeConfig
from tspd.decoding.controllers import Controller, StepView, make_controller
from tspd.decoding.controllers.egp import EGP
from tspd.decoding.loop import generate
from tspd.models.loading import default_task
from tspd.records.files import read_jsonl

FORMAT = "tspd-traces-v1"
CHANNELS = ("conf", "ce_conf", "entropy", "ewma", "momentum", "u")
CONTROLLERS = ("egp", "vanilla", "mixed")
TRACES_SPLIT = "-traces"   # prompt source "<task>-traces": a generated task's traces split (arith-traces, chain-traces)


class Recorder(Controller):
    """Delegates every call to ``inner`` and keeps, per step, the view's per-token features."""

    def __init__(self, inner: Controller):
        self.inner = inner
        self.name, self.fixed_schedule, self.force_progress = inner.name, inner.fixed_schedule, inner.force_progress
        self.steps: list[dict] = []

    def bind(self, model):
        self.inner.bind(model)

    def reset(self, batch, gen_length, block_length, device):
        self.steps = []
        self.inner.reset(batch, gen_length, block_length, device)

    def start_block(self, block):
        self.inner.start_block(block)

    def decide(self, view: StepView):
        feats = torch.stack([t.float() for t in (view.raw_conf, view.conf, view.entropy, view.ewma,
                                                 view.momentum, view.u)], -1)
        self.steps.append(dict(block=view.block, features=feats.cpu(), x0=view.x0.cpu(), masked=view.masked.cpu()))
        return self.inner.decide(view)


def block_sequences(steps: list[dict], final: torch.Tensor, block_length: int):
    """Per (row, block) sequences of the steps where that row still had masks in the block.

    Yields (row, block, features [S, Lb, C], labels [S, Lb] bool, masked [S, Lb] bool).
    """
    B = final.shape[0]
    by_block: dict[int, list[dict]] = {}
    for st in steps:
        by_block.setdefault(st["block"], []).append(st)
    for row in range(B):
        for b, sts in sorted(by_block.items()):
            ref = final[row, b * block_length:(b + 1) * block_length]
            live = [st for st in sts if st["masked"][row].any()]
            if not live:
                continue
            yield (row, b, torch.stack([st["features"][row] for st in live]),
                   torch.stack([st["x0"][row] == ref for st in live]),
                   torch.stack([st["masked"][row] for st in live]))


COLLECT = DecodeConfig(ce=True)   # what collect() decodes with by default: the checkpoint's window, CE on


def collect(model, prompts: list, decode: DecodeConfig = COLLECT, *, controller: str = "egp", batch_size: int = 8,
            progress: bool = True, meta: dict | None = None) -> dict:
    """Decode ``prompts`` (strings or id lists) and return the trace file's content (see module doc).

    ``decode`` gives the window (None lengths: the checkpoint's own), cache and CE of the recorded
    decoding; its controller is the collection ``controller``'s (EGP, or vanilla), and the vanilla
    reference EGP reproduces is decoded with the same window and cache, without CE.
    """
    decode = decode.resolved(model)
    if controller not in CONTROLLERS:
        raise ValueError(f"controller must be one of {CONTROLLERS}, got {controller!r}")
    from tqdm.auto import tqdm
    feats, labels, masked, offsets, prompt_idx, blocks = [], [], [], [0], [], []
    stats = dict(egp_matches_vanilla=0, egp_rows=0, rows=0, forwards=0, vanilla_forwards=0)
    base = decode.replace(controller="vanilla", controller_kwargs={}, ce=False, ce_kwargs={})   # the reference
    bar = tqdm(total=len(prompts), desc=f"collect-traces ({controller})", disable=not progress, unit="prompt")
    for k, start in enumerate(range(0, len(prompts), batch_size)):
        batch = prompts[start:start + batch_size]
        use_egp = controller == "egp" or (controller == "mixed" and k % 2 == 0)
        if use_egp:
            ref = generate(model, batch, base)
            stats["vanilla_forwards"] += ref.nfe
            rec = Recorder(EGP(reference=ref.token_ids))
        else:
            rec = Recorder(make_controller("vanilla"))
        out = generate(model, batch, decode, controller=rec)
        stats["forwards"] += out.nfe
        stats["rows"] += len(batch)
        if use_egp:
            stats["egp_matches_vanilla"] += int((out.token_ids == ref.token_ids).all(-1).sum())
            stats["egp_rows"] += len(batch)
        for row, b, f, y, m in block_sequences(rec.steps, out.token_ids, decode.block_length):
            feats.append(f)
            labels.append(y)
            masked.append(m)
            offsets.append(offsets[-1] + f.shape[0])
            prompt_idx.append(start + row)
            blocks.append(b)
        bar.update(len(batch))
    bar.close()
    return {
        "format": FORMAT,
        "channels": list(CHANNELS),
        "features": torch.cat(feats),                     # [N_steps, Lb, C] float32
        "labels": torch.cat(labels),                      # [N_steps, Lb] bool: argmax == final token
        "masked": torch.cat(masked),                      # [N_steps, Lb] bool: still masked before the step
        "offsets": torch.tensor(offsets),                 # sequence m = steps offsets[m]:offsets[m + 1]
        "prompt_index": torch.tensor(prompt_idx),         # [M]
        "block": torch.tensor(blocks),                    # [M]
        "meta": dict({**(meta or {}), "policy": controller},     # (the key stored trace sets spell it with)
                     gen_length=decode.gen_length, block_length=decode.block_length,
                     steps=decode.steps, cache=decode.cache, ce=bool(decode.ce), ce_kwargs=decode.ce_kwargs,
                     prompts=len(prompts), **stats),
    }


def save_traces(data: dict, path: str | Path) -> None:
    """Write a trace set gzip-compressed (lossless; most masked-out feature rows are zeros, about 4x smaller)."""
    buf = io.BytesIO()
    torch.save(data, buf)
    Path(path).write_bytes(gzip.compress(buf.getvalue(), compresslevel=6, mtime=0))


def load_traces(path: str | Path) -> dict:
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":            # gzip magic: written by save_traces (older files are plain torch.save)
        raw = gzip.decompress(raw)
    data = torch.load(io.BytesIO(raw), weights_only=False)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} trace file (written by `python -m tspd collect-traces`)")
    return data


# ------------------------------------------------------------------------------------------------
# Prompt sources
# ------------------------------------------------------------------------------------------------
# FLAN task families that overlap the evaluation benchmarks (paper Section 4.1: "out of the used
# evaluation benchmarks") are skipped.
FLAN_EXCLUDE = ("gsm8k", "math", "humaneval", "mbpp", "code")
_TASK_FIELDS = ("task", "task_name", "_task_name", "template_task")
_TEXT_FIELDS = ("inputs", "input", "prompt", "question", "text")


def _field(row: dict, names: tuple[str, ...]) -> str | None:
    return next((row[n] for n in names if n in row and row[n]), None)


def load_flan(source: str, per_task: int = 40, tasks: int = 66) -> list[str]:
    """The paper's FLAN training prompts: ``per_task`` prompts from each of the first ``tasks`` task types.

    ``source`` is a local JSONL file (one object per line with a task name and an input text field)
    or a ``datasets`` hub id (streamed; needs the ``hub`` extra and network access). Task types whose
    name contains one of :data:`FLAN_EXCLUDE` are skipped. Deterministic: file/stream order.
    """
    if Path(source).exists():
        rows = iter(read_jsonl(source))
    else:
        import datasets   # lazy: only this path needs it
        rows = iter(datasets.load_dataset(source, split="train", streaming=True))
    taken: dict[str, list[str]] = {}
    for row in rows:
        task, text = _field(row, _TASK_FIELDS), _field(row, _TEXT_FIELDS)
        if not task or not text or any(x in task.lower() for x in FLAN_EXCLUDE):
            continue
        if task not in taken and len(taken) >= tasks:
            continue
        bucket = taken.setdefault(task, [])
        if len(bucket) < per_task:
            bucket.append(text)
        if len(taken) >= tasks and all(len(v) >= per_task for v in taken.values()):
            break
    if not taken:
        raise ValueError(f"{source}: no rows with a task name ({_TASK_FIELDS}) and a text ({_TEXT_FIELDS})")
    return [t for v in taken.values() for t in v]


def own_traces(model=None) -> str:
    """The prompt source of a model's own traces split, ``<task>-traces`` of the task it was trained on
    (:func:`tspd.models.loading.default_task`): ``arith-traces`` for ``tiny-arith``."""
    return default_task(model) + TRACES_SPLIT


def load_prompts(source: str, n: int | None, flan_source: str | None = None) -> list[str]:
    """``<task>-traces`` (a generated task's traces split: ``arith-traces``, ``chain-traces``), ``flan``, or a
    .jsonl / .txt file."""
    from tspd.tasks.generated import GENERATED
    task = source[:-len(TRACES_SPLIT)] if source.endswith(TRACES_SPLIT) else None
    if task in GENERATED:
        module = GENERATED[task]
        return [module.prompt(p) for p in module.load_split("traces", n)]
    if source == "flan":
        if not flan_source:
            raise ValueError("--prompts flan needs --flan-source (a local JSONL file or a datasets hub id)")
        prompts = load_flan(flan_source)
    else:
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"no prompt file {source!r} (or use <task>-traces / flan, e.g. arith-traces)")
        if path.suffix == ".jsonl":
            prompts = [_field(row, _TEXT_FIELDS) for row in read_jsonl(path)]
            if any(p is None for p in prompts):
                raise ValueError(f"{path}: every line needs one of the fields {_TEXT_FIELDS}")
        else:
            prompts = [line for line in path.read_text().splitlines() if line.strip()]
    return prompts[:n] if n else prompts
