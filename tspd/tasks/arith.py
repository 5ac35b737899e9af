"""``arith``: the embedded tiny model's synthetic word problems (:mod:`tspd.arith`).

The prompt is the question itself (no few-shot, no chat template, whatever the tokenizer); grading is
exact match of the final ``#### N`` number against the reference solution's.
"""
from __future__ import annotations

import importlib

from .base import Task


def _arith():
    """:mod:`tspd.arith`, imported on first use (it is another module's responsibility)."""
    return importlib.import_module("tspd.arith")


class Arith(Task):
    name = "arith"
    splits = ("test", "traces", "train")
    supports_chat = False

    def _load(self) -> list[dict]:
        if self.source:
            raise ValueError("the arith task is generated locally; it has no hub source")
        if self.split == "train":
            raise ValueError("the arith train split is an endless stream; evaluate 'test' or 'traces'")
        return [dict(p) for p in _arith().load_split(self.split)]

    def prompt(self, sample: dict, tokenizer=None, chat: bool | None = None) -> str:
        return self.prompt_text(sample)   # never a chat template: the tiny model was trained on raw text

    def prompt_text(self, sample: dict) -> str:
        return sample["question"]

    def stop_strings(self, chat: bool = False) -> list[str]:
        return []

    def reference_completion(self, sample: dict) -> str:
        return sample["answer"]

    def grade(self, sample: dict, completion: str) -> dict:
        extract = _arith().extract_answer
        gold, pred = extract(sample["answer"]), extract(completion)
        correct = pred is not None and pred == gold
        if correct:
            reason = None
        elif pred is None:
            reason = "no '#### N' answer in the output"
        else:
            reason = f"wrong answer: got {pred}, expected {gold}"
        return {"correct": correct, "reason": reason, "extracted": pred, "gold": gold}
