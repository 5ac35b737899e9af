"""GSM8K, 5-shot, in lm-eval's ``gsm8k`` format (task version 3.0).

Prompt: the first 5 train problems as ``Question: {question}\\nAnswer: {answer}`` (the raw answer field:
worked solution with calculator annotations, ending ``#### N``), joined and followed by a blank line,
then ``Question: {question}\\nAnswer:``. Stops: ``Question:``, ``</s>``, ``<|im_end|>``.
"""
from __future__ import annotations

from tspd.tasks import grading
from tspd.tasks.base import Task
from tspd.tasks.data import data_file, load_hub, read_data

NUM_FEWSHOT = 5              # lm-eval's default for gsm8k
FEWSHOT_DELIMITER = "\n\n"   # lm-eval's default between examples
HUB_CONFIG = "main"          # the openai/gsm8k config with the "#### N" answers


class GSM8K(Task):
    name = "gsm8k"
    stop = ("Question:", "</s>", "<|im_end|>")
    splits = ("test", "train")

    def _rows(self, split: str) -> list[dict]:
        if self.source:
            return load_hub(self.source, split, HUB_CONFIG)
        return read_data(data_file(self.data_dir, f"gsm8k/{split}.jsonl"))

    def _load(self) -> list[dict]:
        return [{"id": f"gsm8k/{self.split}/{i}", "question": r["question"], "answer": r["answer"]}
                for i, r in enumerate(self._rows(self.split))]

    def fewshot_examples(self) -> list[dict]:
        """The first ``NUM_FEWSHOT`` train problems (lm-eval's ``first_n`` sampler)."""
        if not hasattr(self, "_fewshot"):
            self._fewshot = self._rows("train")[:NUM_FEWSHOT]
        return self._fewshot

    def prompt_text(self, sample: dict) -> str:
        shots = [f"Question: {ex['question']}\nAnswer: {ex['answer']}" for ex in self.fewshot_examples()]
        return FEWSHOT_DELIMITER.join(shots + [f"Question: {sample['question']}\nAnswer:"])

    def reference_completion(self, sample: dict) -> str:
        return sample["answer"]

    def grade(self, sample: dict, completion: str) -> dict:
        return grading.grade_gsm8k(completion, sample["answer"])
