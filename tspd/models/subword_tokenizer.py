"""A subword (BPE) HF tokenizer for the embedded ``tiny-arith`` model, trained on the task's own text.

Why: a character tokenizer spends 58-72 positions on a question and makes the model parse numbers
character by character (which characters are the k-th number?), the first thing every CPU training run
had to learn. A byte-level BPE trained on the task's text makes every word of the templates one token
(questions: 20-26 tokens, answers: 33-44), while digits stay one token each, as in LLaMA's and LLaDA's
tokenizers, so arithmetic is still written digit by digit.

Pre-tokenization: digits are isolated (``Digits(individual_digits=True)``), then GPT-2's byte-level
split (a leading space joins the word after it). Any text encodes (the byte alphabet is in the
vocabulary), and decoding gives back the exact text. The special tokens are the character tokenizer's
(:data:`tspd.models.char_tokenizer.SPECIAL_TOKENS`: BOS, EOS = pad, mask, unk), with the same ids 0-3.

:func:`train_tokenizer` saves ``tokenizer.json`` + ``tokenizer_config.json`` that
``transformers.AutoTokenizer`` loads, like any Hugging Face checkpoint's tokenizer: the model loader
(:func:`tspd.models.loading.load_tokenizer`) needs no special case.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from tspd.models.char_tokenizer import BOS, EOS, MASK, SPECIAL_TOKENS, UNK, save_hf

VOCAB_SIZE = 640          # above what the templates' words need (~580): every word becomes one token


def _backend(texts: Iterable[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    return tok


def train_tokenizer(texts: Iterable[str], out_dir: str | Path | None = None, vocab_size: int = VOCAB_SIZE):
    """Learn BPE merges on ``texts`` (the task's questions and answers); with ``out_dir``, save it there.

    Returns a ``transformers.PreTrainedTokenizerFast`` with bos/eos/pad/mask/unk set.
    """
    return save_hf(_backend(texts, vocab_size), out_dir)


__all__ = ["train_tokenizer", "VOCAB_SIZE", "BOS", "EOS", "MASK", "UNK"]
