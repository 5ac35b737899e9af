"""The training data of ``train-lm``: a left-padded prompt and an EOS-padded answer per sequence.

Batches are left-padded with the pad token and carry an attention mask and ``position_ids =
cumsum(mask) - 1``: exactly how :func:`tspd.decoding.loop.generate` batches prompts at inference. The
tokenizer is trained on the task's own text (:func:`make_tokenizer`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from tspd.tasks import arith
from tspd.tasks.generated import generated_task
from tspd.models.char_tokenizer import build_tokenizer
from tspd.models.subword_tokenizer import train_tokenizer
from tspd.training.lm.config import LMTrainConfig, tasks


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
    texts = [t for name in tasks(cfg) for t in task_texts(task=generated_task(name))]
    return train_tokenizer(texts, out)


def task_texts(n: int = 20000, seed: str = "tokenizer", task=arith) -> list[str]:
    """Questions and worked answers of ``n`` training problems of ``task`` (never a test or traces problem):
    what the subword tokenizer's merges are learned from."""
    stream = task.iter_train(seed)
    problems = [next(stream) for _ in range(n)]
    return [p["question"] for p in problems] + [p["answer"] for p in problems]


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
    offsets = bool(clean_chars or scored_chars)
    enc = tokenizer(answer, add_special_tokens=False, return_offsets_mapping=offsets)
    return _eos_filled(tokenizer.eos_token_id, enc["input_ids"], enc.get("offset_mapping"), gen_length, clean_chars,
                       scored_chars)


def _eos_filled(eos: int, ids: list[int], offsets, gen_length: int, clean_chars: int, scored_chars: int):
    if len(ids) >= gen_length:
        raise ValueError(f"an answer of {len(ids)} tokens does not fit gen_length={gen_length} with an EOS after it: "
                         f"give --gen-length at least {len(ids) + 1} (the task's own window is its GEN_LENGTH)")
    within = lambda chars: sum(end <= chars for _, end in offsets) if chars else 0   # noqa: E731
    return ids + [eos] * (gen_length - len(ids)), within(clean_chars), within(scored_chars)


def make_batch(tokenizer, problems: list[dict], gen_length: int, prompt_multiple: int = 1) -> Batch:
    """Collate problems the way inference batches prompts (left padding with the pad token).

    Questions and answers are each encoded in one tokenizer call (the fast tokenizer's batch path), and the
    rows built as lists: a GPU's training step outruns one Python thread that encodes problem by problem."""
    prompts = tokenizer([p["question"] for p in problems], add_special_tokens=False)["input_ids"]   # task.prompt
    offsets = any(p.get("clean_chars", 0) or p.get("scored_chars", 0) for p in problems)
    answers = tokenizer([p["answer"] for p in problems], add_special_tokens=False, return_offsets_mapping=offsets)
    width = max(map(len, prompts))
    width = -(-width // prompt_multiple) * prompt_multiple
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    rows, masks, clean, until = [], [], [], []
    for i, (p, pr) in enumerate(zip(problems, prompts)):
        answer, c, u = _eos_filled(eos, answers["input_ids"][i], answers["offset_mapping"][i] if offsets else None,
                                   gen_length, p.get("clean_chars", 0), p.get("scored_chars", 0))
        rows.append([pad] * (width - len(pr)) + pr + answer)   # an altered solution's tokens up to ``clean`` stay visible
        masks.append([0] * (width - len(pr)) + [1] * (len(pr) + gen_length))
        clean.append([c])
        until.append([u])
    ids, mask = torch.tensor(rows, dtype=torch.long), torch.tensor(masks, dtype=torch.long)
    clean, until = torch.tensor(clean, dtype=torch.long), torch.tensor(until, dtype=torch.long)
    pos = (mask.cumsum(-1) - 1).clamp_min(0)
    return Batch(ids, mask, pos, width, clean if clean.any() else None, until if until.any() else None)
