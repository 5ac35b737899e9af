"""The training data of ``train-lm``: a left-padded prompt and an EOS-padded answer per sequence.

Batches are left-padded with the pad token and carry an attention mask and ``position_ids =
cumsum(mask) - 1``: exactly how :func:`tspd.decoding.loop.generate` batches prompts at inference. The
tokenizer is trained on the task's own text (:func:`make_tokenizer`).
"""
from __future__ import annotations

import queue
import random
import threading
from dataclasses import dataclass
from pathlib import Path

import torch

from tspd.eval.tasks import arith
from tspd.eval.tasks.generated import generated_task
from tspd.models.char_tokenizer import build_tokenizer
from tspd.models.subword_tokenizer import train_tokenizer
from tspd.training.lm.config import LMTrainConfig, mixes, tasks, windows


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

    With ``--mix-tasks`` a batch's task is drawn from a generator seeded by its index, and a batch of another
    task holds its problems at that task's own window. With ``--long-windows`` a ``--task`` batch's window
    is drawn likewise, and a longer window's batch holds proportionally fewer problems (about the same
    positions a step); every batch draws ``batch_size`` problems from its task's stream all the same, so a
    resumed run finds each stream's position by replaying the draws of the batches before it.
    """

    def __init__(self, tokenizer, cfg: LMTrainConfig, prefetch: int = 4, skip_batches: int = 0):
        self.tokenizer, self.cfg = tokenizer, cfg
        self.task = generated_task(cfg.task)
        self.windows, self.mixes = windows(cfg), mixes(cfg)
        self.problems = {name: generated_task(name).iter_train(cfg.seed) for name in tasks(cfg)}
        for index in range(skip_batches):                # a resumed run continues the same streams
            stream = self.problems[self._task_of(index)]
            for _ in range(cfg.batch_size):
                next(stream)
        self.index = skip_batches
        self.queue: queue.Queue = queue.Queue(maxsize=prefetch)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._fill, daemon=True)
        self.thread.start()

    def _fill(self) -> None:
        try:
            while not self.stop.is_set():
                name = self._task_of(self.index)
                task = generated_task(name)
                chunk = [next(self.problems[name]) for _ in range(self.cfg.batch_size)]
                if name != self.cfg.task:                # another task's batch: its own window, as it comes
                    self.index += 1
                    self._put(self._pinned(make_batch(self.tokenizer, chunk, task.GEN_LENGTH, self.cfg.prompt_multiple)))
                    continue
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
                self._put(self._pinned(make_batch(self.tokenizer, chunk, window, self.cfg.prompt_multiple)))
        except BaseException as e:   # hand the error to the training loop instead of leaving it waiting
            self._put(e)

    def _pinned(self, batch: Batch) -> Batch:
        return batch.pin_memory() if torch.cuda.is_available() and self.cfg.device == "cuda" else batch

    def _task_of(self, index: int) -> str:
        """Batch ``index``'s task: ``--task``, or one of ``--mix-tasks`` with its share."""
        return self._draw("mix", index, self.mixes, self.cfg.task)

    def _draw(self, what: str, index: int, choices: list, default):
        """One of ``choices`` ``[(value, share)]`` with its share, else ``default``, seeded by the batch's index
        (no draw without choices, so older runs resume alike)."""
        if not choices:
            return default
        u = random.Random(f"{what}-{self.cfg.seed}-{index}").random()
        for value, share in choices:
            if u < share:
                return value
            u -= share
        return default

    def _window(self) -> int:
        """This batch's answer window: ``gen_length``, or a longer one with its ``--long-windows`` share."""
        return self._draw("window", self.index, self.windows, self.cfg.gen_length)

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
