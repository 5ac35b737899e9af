"""The task interface shared by every benchmark, and the prompt/stop-string helpers.

A task turns its data set into samples (dicts with a stable string ``id``), a sample into a prompt,
and a completion into a grade. Prompts for Instruct models (``chat=True``, or ``chat=None`` with a
tokenizer that has a chat template) are the whole few-shot text as ONE user turn rendered with the
tokenizer's chat template, as Fast-dLLM's and Learn2PD's lm-eval wrappers do; base models get raw text.
"""
from __future__ import annotations

from pathlib import Path


def use_chat(tokenizer=None, chat: bool | None = None) -> bool:
    """Resolve the chat switch: explicit ``chat`` wins; ``None`` means "if the tokenizer has a template"."""
    if chat is not None:
        return bool(chat)
    return bool(getattr(tokenizer, "chat_template", None))


def render_prompt(text: str, tokenizer=None, chat: bool | None = None) -> str:
    """``text`` as is (base models) or as one user turn through the tokenizer's chat template."""
    if not use_chat(tokenizer, chat):
        return text
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        raise ValueError("chat=True needs a tokenizer with a chat_template")
    return tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                         add_generation_prompt=True, tokenize=False)


def cut_at_stop(text: str, stops) -> str:
    """``text`` up to the earliest occurrence of any stop string (unchanged if none occurs)."""
    cut = len(text)
    for s in stops:
        if s:
            i = text.find(s)
            if 0 <= i < cut:
                cut = i
    return text[:cut]


class Task:
    """One benchmark. Subclasses set ``name`` and ``stop`` and implement the ``_``-prefixed hooks.

    Args:
        data_dir: directory with the local data files (default: :func:`tspd.tasks.data.default_data_dir`).
        split: which split to evaluate (``test`` for all benchmarks).
        source: a ``datasets`` hub id to read instead of local files (imported lazily, needs network).
    """
    name: str = ""
    stop: tuple[str, ...] = ()          # stop strings for raw (base-model) prompts
    chat_stop: tuple[str, ...] | None = None   # for chat prompts; None = same as ``stop``
    executes_code: bool = False         # grading runs generated code (sandboxed subprocesses)
    supports_chat: bool = True          # False: prompts are raw text even for chat tokenizers
    splits: tuple[str, ...] = ("test",)

    def __init__(self, data_dir: str | Path | None = None, split: str = "test", source: str | None = None):
        if split not in self.splits:
            raise ValueError(f"task {self.name!r} has no split {split!r} (known: {', '.join(self.splits)})")
        self.data_dir, self.split, self.source = data_dir, split, source
        self._samples: list[dict] | None = None

    # ---- public API -----------------------------------------------------------------------------
    def samples(self, limit: int | None = None) -> list[dict]:
        """The split's samples in data-set order (the first ``limit`` when given)."""
        if self._samples is None:
            rows = self._load()
            ids = [r["id"] for r in rows]
            if len(set(ids)) != len(ids):
                raise ValueError(f"task {self.name!r}: duplicate sample ids in the data")
            self._samples = rows
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        return list(self._samples if limit is None else self._samples[:limit])

    def prompt(self, sample: dict, tokenizer=None, chat: bool | None = None) -> str:
        """The model input for ``sample`` (raw text, or one chat user turn; see the module docstring)."""
        return render_prompt(self.prompt_text(sample), tokenizer, chat)

    def stop_strings(self, chat: bool = False) -> list[str]:
        """Stop strings for generations from raw (``chat=False``) or chat prompts."""
        return list(self.chat_stop if (chat and self.chat_stop is not None) else self.stop)

    def postprocess(self, text: str, chat: bool = False) -> str:
        """A raw generation cut at the first stop string."""
        return cut_at_stop(text, self.stop_strings(chat))

    # ---- per-task hooks -------------------------------------------------------------------------
    def _load(self) -> list[dict]:
        raise NotImplementedError

    def prompt_text(self, sample: dict) -> str:
        """The prompt before any chat template (few-shot examples included)."""
        raise NotImplementedError

    def reference_completion(self, sample: dict) -> str:
        """The completion the data set's own reference solution gives."""
        raise NotImplementedError

    def grade(self, sample: dict, completion: str) -> dict:
        """``{"correct": bool, "reason": str | None, "extracted": ...}`` plus task-specific fields."""
        raise NotImplementedError


class GeneratedTask(Task):
    """A task this repository generates (``arith``, ``roster``, ``trail``, ...): its fixed ``test`` / ``traces``
    lists from its module's ``load_split`` (``problems``), prompts as raw text (the embedded models were trained on
    it), the reference answer as the reference completion. Subclasses set ``name``, ``problems`` and ``grade``."""
    splits = ("test", "traces", "train")
    supports_chat = False

    @staticmethod
    def problems(split: str) -> list[dict]:
        """The generated task's fixed list ``split`` (each subclass names its own module's ``load_split``)."""
        raise NotImplementedError

    def _load(self) -> list[dict]:
        if self.source:
            raise ValueError(f"the {self.name} task is generated locally; it has no hub source")
        if self.split == "train":
            raise ValueError(f"the {self.name} train split is an endless stream; evaluate 'test' or 'traces'")
        return [dict(p) for p in self.problems(self.split)]

    def prompt(self, sample: dict, tokenizer=None, chat: bool | None = None) -> str:
        return self.prompt_text(sample)   # never a chat template: the tiny models were trained on raw text

    def prompt_text(self, sample: dict) -> str:
        return sample["question"]

    def stop_strings(self, chat: bool = False) -> list[str]:
        return []

    def reference_completion(self, sample: dict) -> str:
        return sample["answer"]
