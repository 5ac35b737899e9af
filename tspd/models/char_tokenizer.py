"""A character-level HF tokenizer for the embedded ``tiny-arith`` model.

One token per character of printable ASCII plus newline (a ``WordLevel`` vocabulary, a pre-tokenizer
that isolates every character, a ``Fuse`` decoder that joins them without spaces), and LLaDA's special
tokens: ``<|startoftext|>`` (BOS), ``<|endoftext|>`` (EOS, also the pad token, as LLaDA pads answers
with EOS), ``<|mdm_mask|>`` (the diffusion mask) and ``<|unk|>``. No BOS/EOS is added automatically:
``tokenizer(text)`` is the characters of ``text`` and nothing else, so callers that pass
``add_special_tokens=False`` get the same ids.

:func:`build_tokenizer` writes ``tokenizer.json`` + ``tokenizer_config.json`` that
``transformers.AutoTokenizer.from_pretrained`` loads as a ``PreTrainedTokenizerFast``.
"""
from __future__ import annotations

import json
import string
from pathlib import Path

BOS, EOS, MASK, UNK = "<|startoftext|>", "<|endoftext|>", "<|mdm_mask|>", "<|unk|>"
SPECIAL_TOKENS = [BOS, EOS, MASK, UNK]
# Printable ASCII without the vertical tab and form feed, which never occur in task text.
CHARSET = "\n" + "".join(chr(c) for c in range(32, 127))
assert set(CHARSET) <= set(string.printable)


def _backend():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + list(CHARSET))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(SPECIAL_TOKENS)
    return tok


def build_tokenizer(out_dir: str | Path | None = None):
    """Build the character tokenizer; with ``out_dir``, also save it there for ``AutoTokenizer``.

    Returns a ``transformers.PreTrainedTokenizerFast`` with bos/eos/pad/mask/unk set.
    """
    return save_hf(_backend(), out_dir)


def save_hf(backend, out_dir: str | Path | None = None):
    """Wrap a ``tokenizers.Tokenizer`` as the embedded model's HF tokenizer (special tokens, left
    padding, no BOS/EOS added) and, with ``out_dir``, save it there for ``AutoTokenizer``."""
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token=BOS, eos_token=EOS, pad_token=EOS, mask_token=MASK,
        unk_token=UNK, padding_side="left",          # inference batches prompts left-padded
        clean_up_tokenization_spaces=False,          # " ." must decode as " ."
        model_max_length=512)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        hf.save_pretrained(str(out))
        _tidy_config(out / "tokenizer_config.json")
    return hf


def _tidy_config(path: Path) -> None:
    """Pin the fields ``AutoTokenizer`` needs; drop any chat template (this model has none)."""
    cfg = json.loads(path.read_text())
    cfg.pop("chat_template", None)
    cfg.update(tokenizer_class="PreTrainedTokenizerFast", bos_token=BOS, eos_token=EOS, pad_token=EOS,
               mask_token=MASK, unk_token=UNK, padding_side="left", clean_up_tokenization_spaces=False,
               add_bos_token=False, add_eos_token=False)
    path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")
