"""The embedded model's subword tokenizer (tspd.models.subword_tokenizer)."""
from __future__ import annotations

import pytest

from tspd.tasks import arith
from tspd.models.char_tokenizer import SPECIAL_TOKENS
from tspd.models.loading import load_tokenizer
from tspd.models.subword_tokenizer import train_tokenizer
from tspd.training.lm.data import task_texts


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    out = tmp_path_factory.mktemp("bpe")
    train_tokenizer(task_texts(2000), out)
    return out, load_tokenizer(out)


def test_round_trip_and_digits_are_single_tokens(saved):
    _, tok = saved
    for p in arith.load_split("test", 50):
        text = p["question"] + "\n" + p["answer"]
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == text
        pieces = tok.convert_ids_to_tokens(ids)
        assert all(not any(c.isdigit() for c in piece) or len(piece) == 1 for piece in pieces)


def test_words_merge_so_questions_are_short(saved):
    _, tok = saved
    problems = arith.load_split("test", 50)
    lengths = [len(tok(p["question"], add_special_tokens=False)["input_ids"]) for p in problems]
    assert max(lengths) < min(len(p["question"]) for p in problems) / 2


def test_special_tokens_and_padding_like_the_char_tokenizer(saved):
    _, tok = saved
    assert tok.convert_ids_to_tokens([0, 1, 2, 3]) == SPECIAL_TOKENS
    assert tok.pad_token_id == tok.eos_token_id == 1 and tok.mask_token_id == 2
    assert tok.padding_side == "left"
    assert tok("4 pens")["input_ids"] == tok("4 pens", add_special_tokens=False)["input_ids"]


def test_text_outside_the_task_still_encodes(saved):
    _, tok = saved
    text = "Zürich: 3 × 4 = ?"
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text
    assert tok.unk_token_id not in tok(text)["input_ids"]


def test_training_is_deterministic(tmp_path):
    texts = task_texts(500)
    train_tokenizer(texts, tmp_path / "a")
    train_tokenizer(texts, tmp_path / "b")
    assert (tmp_path / "a" / "tokenizer.json").read_text() == (tmp_path / "b" / "tokenizer.json").read_text()
