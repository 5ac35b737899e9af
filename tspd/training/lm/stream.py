"""``train-lm``'s batch stream: the task's training problems, batched ahead of the training loop.

Batch ``i`` is a function of the run's seed and ``i`` alone: its task (``--mix-tasks``), window
(``--long-windows``), alterations and operand orders are drawn from generators seeded by ``i``, and its
problems are the next ``batch_size`` of its task's stream. So a resumed run replays the streams' draws up
to its step, and ``--data-workers N`` processes can build every N-th batch each (each replays the
problem draws of all batches and tokenizes only its own): the same batches, in the same order, as the one
background thread (one thread builds about 4k sequences of 256 tokens a second on this CPU; a small model's
step on a GPU eats 20k). Replaying the draws is not cheap: on an H100, 12 processes fed the step more
slowly than one thread (``results/training/g1-chain-gpu``). With ``--batch-seeds`` each batch draws from a seed of its own
(``<seed>-batch<index>``), so a worker draws only its own batches and a resume skips without drawing;
those are other batches than the one stream's (equally drawn), so turning it on at a resume goes on with
other problems, not with a replay.
"""
from __future__ import annotations

import os
import queue
import random
import threading

import torch
import torch.multiprocessing

from tspd.tasks.generated import generated_task
from tspd.training.lm.config import LMTrainConfig, mixes, tasks, windows
from tspd.training.lm.data import Batch, make_batch


class BatchStream:
    """Training batches built ahead: in a background thread, or in ``cfg.data_workers`` processes.

    With ``--mix-tasks`` a batch of another task holds its problems at that task's own window; with
    ``--long-windows`` a longer window's batch holds proportionally fewer problems (about the same
    positions a step); every batch draws ``batch_size`` problems from its task's stream all the same.
    """

    def __init__(self, tokenizer, cfg: LMTrainConfig, prefetch: int = 4, skip_batches: int = 0):
        self.tokenizer, self.cfg = tokenizer, cfg
        self.task = generated_task(cfg.task)
        self.windows, self.mixes = windows(cfg), mixes(cfg)
        self.index = skip_batches                       # the next batch handed out
        workers = cfg.data_workers
        if workers:       # fork: the children inherit the tokenizer and touch no GPU
            ctx = torch.multiprocessing.get_context("fork")
            self.stop = ctx.Event()
            self.queues = [ctx.Queue(maxsize=prefetch) for _ in range(workers)]
            self.builders = [ctx.Process(target=self._fill, args=(w, workers, skip_batches, q), daemon=True)
                             for w, q in enumerate(self.queues)]
        else:
            self.stop = threading.Event()
            self.queues = [queue.Queue(maxsize=prefetch)]
            self.builders = [threading.Thread(target=self._fill, args=(0, 1, skip_batches, self.queues[0]), daemon=True)]
        for b in self.builders:
            b.start()

    def _fill(self, worker: int, workers: int, index: int, out) -> None:
        """Build batches ``worker, worker + workers, ...`` from ``index`` on into ``out``."""
        try:
            if self.cfg.data_workers:                     # a worker process: one thread each
                torch.set_num_threads(1)
                os.environ["TOKENIZERS_PARALLELISM"] = "false"
            seeded = self.cfg.batch_seeds                 # each batch its own stream: nothing to replay
            problems = {name: generated_task(name).iter_train(self.cfg.seed) for name in tasks(self.cfg)}

            def draw(i: int, name: str) -> list[dict]:
                stream = generated_task(name).iter_train(f"{self.cfg.seed}-batch{i}") if seeded else problems[name]
                return [next(stream) for _ in range(self.cfg.batch_size)]

            for i in range(0 if seeded else index):       # a resumed run continues the same streams
                draw(i, self._task_of(i))
            while not self.stop.is_set():
                name = self._task_of(index)
                if index % workers == worker:
                    self._put(out, self._batch(index, name, draw(index, name)))
                elif not seeded:                          # another worker's batch: keep the one stream in step
                    draw(index, name)
                index += 1
        except BaseException as e:   # hand the error to the training loop instead of leaving it waiting
            self._put(out, e)

    def _batch(self, index: int, name: str, chunk: list[dict]) -> Batch:
        """Batch ``index`` of task ``name`` from its drawn problems."""
        if name != self.cfg.task:                    # another task's batch: its own window, as it comes
            return make_batch(self.tokenizer, chunk, generated_task(name).GEN_LENGTH, self.cfg.prompt_multiple)
        if self.cfg.alter_frac:   # the same alterations after a resume: seeded by the batch's index
            rng = random.Random(f"alter-{self.cfg.seed}-{index}")
            chunk = [(rng.random() < self.cfg.alter_frac and self.task.altered(p, rng, self._partial(rng))) or p
                     for p in chunk]
        if self.cfg.swap_frac:
            rng = random.Random(f"swap-{self.cfg.seed}-{index}")
            chunk = [self.task.reordered(p, rng) if rng.random() < self.cfg.swap_frac else p for p in chunk]
        window = self._draw("window", index, self.windows, self.cfg.gen_length)
        chunk = chunk[:max(1, len(chunk) * self.cfg.gen_length // window)]
        return make_batch(self.tokenizer, chunk, window, self.cfg.prompt_multiple)

    def _task_of(self, index: int) -> str:
        """Batch ``index``'s task: ``--task``, or one of ``--mix-tasks`` with its share."""
        return self._draw("mix", index, self.mixes, self.cfg.task)

    def _draw(self, what: str, index: int, choices: list, default):
        """One of ``choices`` ``[(value, share)]`` with its share, else ``default``, seeded by the batch's index
        (no draw without choices: with the option off a run's stream is unchanged, so its resume replays it)."""
        if not choices:
            return default
        u = random.Random(f"{what}-{self.cfg.seed}-{index}").random()
        for value, share in choices:
            if u < share:
                return value
            u -= share
        return default

    def _partial(self, rng: random.Random) -> bool:
        """Whether an altered problem takes any value (``alter_any``); no draw when 0, so a run without it replays alike."""
        return bool(self.cfg.alter_any) and rng.random() < self.cfg.alter_any

    def _put(self, out, item) -> None:
        while not self.stop.is_set():
            try:
                out.put(item, timeout=0.5)
                return
            except queue.Full:
                pass

    def __next__(self) -> Batch:
        which = self.index % len(self.queues)
        item = self._get(self.queues[which], self.builders[which])
        self.index += 1
        if isinstance(item, ValueError):   # the options cannot build a batch (an answer longer than the window): one line
            raise ValueError(f"building a training batch failed: {item}") from item
        if isinstance(item, BaseException):
            raise RuntimeError("building a training batch failed") from item
        # pinned for an asynchronous copy to the GPU, here: a forked worker must not touch CUDA
        return item.pin_memory() if self.cfg.device == "cuda" and torch.cuda.is_available() else item

    @staticmethod
    def _get(q, builder):
        """The next item of ``q``; a worker process that died without a word (killed, out of memory) is an error."""
        while True:
            try:
                return q.get(timeout=2.0)
            except queue.Empty:
                if not builder.is_alive():
                    return RuntimeError(f"the batch-building process exited (code {builder.exitcode})")
            except (ConnectionError, EOFError) as e:   # a batch queued by a process since killed: its tensors are gone
                return RuntimeError(f"the batch-building process died before its batch was read ({e!r})")

    def close(self) -> None:
        self.stop.set()
        for b in self.builders:
            if isinstance(b, threading.Thread):
                continue
            b.terminate()
            b.join(timeout=5)
