"""Answer extraction and comparison (tspd.tasks.grading): GSM8K numbers, MATH boxed expressions."""
from __future__ import annotations

import threading

import pytest

from tspd.tasks import grading
from tspd.tasks.grading import (gsm8k_flexible, gsm8k_strict, grade_gsm8k, grade_math, last_boxed,
                          normalize_math, normalize_number)

GOLD = "She has 3 + 4 = <<3+4=7>>7 apples.\n#### 1,234"


# ---- GSM8K --------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, norm", [("1,234", "1234"), ("$18", "18"), ("18.", "18"), (" -5 ", "-5"),
                                       ("#### 72", "72"), ("$1,000.", "1000"), (None, None)])
def test_normalize_number(raw, norm):
    assert normalize_number(raw) == norm


def test_strict_takes_first_hash_answer_then_answer_is():
    assert gsm8k_strict("so 5\n#### 12\n#### 13") == "12"
    assert gsm8k_strict("So the answer is $1,250.") == "1,250."
    assert gsm8k_strict("The final answer is 7 apples") == "7"
    assert gsm8k_strict("It is 7") is None


def test_flexible_takes_last_number_like_span():
    assert gsm8k_flexible("3 + 4 = 7 so he pays $12.50.") == "$12.50."
    assert gsm8k_flexible("answer: -3") == "-3"
    assert gsm8k_flexible("no digits here") is None


def test_grade_gsm8k_reports_both_filters():
    g = grade_gsm8k(" 1000 + 234 = 1,234 so #### 1,234", GOLD)
    assert g["correct"] and g["correct_strict"] and g["extracted"] == "1234" and g["reason"] is None
    g = grade_gsm8k("The total is 1234.", GOLD)            # flexible only
    assert g["correct"] and not g["correct_strict"]
    g = grade_gsm8k("#### 1234\nthen 5 more", GOLD)          # strict only: a later number spoils flexible
    assert g["correct_strict"] and not g["correct"]
    assert g["reason"] == "wrong answer: got 5, expected 1234"
    assert grade_gsm8k("I do not know", GOLD)["reason"] == "no number in the output"


def test_gsm8k_reference_needs_hashes():
    with pytest.raises(ValueError, match="####"):
        grading.gsm8k_reference("no final line")


# ---- MATH extraction ----------------------------------------------------------------------------
@pytest.mark.parametrize("text, boxed", [
    ("so $\\boxed{5}$.", "5"),
    ("first \\boxed{1} then \\boxed{\\frac{a}{b}}", "\\frac{a}{b}"),
    ("\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}", "\\left( 3, \\frac{\\pi}{2} \\right)"),
    ("\\fbox{x^{2}}", "x^{2}"),
    ("$\\boxed 7$", "7"),
    ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
    ("no box", None),
    ("\\boxed{unclosed", None),
    ("\\boxed{2} and \\boxed{unclosed", "2"),
    ("\\boxedx{3}", None),
])
def test_last_boxed(text, boxed):
    assert last_boxed(text) == boxed


@pytest.mark.parametrize("a, b", [
    ("\\dfrac{1}{2}", "\\frac12"), ("x = 5", "5"), ("10{,}000", "10000"), ("1,000", "1000"),
    ("90^\\circ", "90"), ("\\text{(C)}", "(C)"), ("\\left( 1, 2 \\right)", "(1,2)"), (".5", "0.5"),
    ("5.00", "5"), ("50\\%", "50"), ("\\$4.50", "4.50"), ("\\sqrt2", "\\sqrt{2}"), ("7.", "7"),
])
def test_normalize_math_equates_notation(a, b):
    assert normalize_math(a) == normalize_math(b)


@pytest.mark.parametrize("a, b", [("5", "6"), ("(1,2)", "[1,2]"), ("\\frac{1}{2}", "\\frac{2}{1}"), ("1,2", "12")])
def test_normalize_math_keeps_different_values_apart(a, b):
    assert normalize_math(a) != normalize_math(b)


# ---- MATH comparison ----------------------------------------------------------------------------
def test_grade_math_uses_math_verify_for_equal_values():
    g = grade_math("so the answer is $\\boxed{\\frac{1}{2}}$", "0.5")
    assert g["correct"] and g["math_verify"] is True and g["string_match"] is False
    g = grade_math("$\\boxed{2\\sqrt{3}}$", "\\sqrt{12}")
    assert g["correct"] and g["math_verify"] is True


def test_grade_math_wrong_and_missing():
    g = grade_math("$\\boxed{5}$", "6")
    assert not g["correct"] and g["math_verify"] is False and "got '5', expected '6'" in g["reason"]
    g = grade_math("The answer is 6", "6")
    assert not g["correct"] and g["extracted"] is None and "no \\boxed{}" in g["reason"]


def test_string_fallback_when_math_verify_has_no_verdict(monkeypatch):
    monkeypatch.setattr(grading, "math_verify_equal", lambda pred, gold: None)
    g = grade_math("\\boxed{\\text{Evelyn}}", "\\text{Evelyn}")
    assert g["correct"] and g["math_verify"] is None and g["string_match"]
    assert not grade_math("\\boxed{\\text{Bob}}", "\\text{Evelyn}")["correct"]


def test_grade_math_works_outside_the_main_thread():
    """math_verify's signal-based time limit only works in the main thread; we must not crash."""
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("g", grade_math("\\boxed{\\frac{2}{4}}", "\\frac12")))
    t.start()
    t.join()
    assert box["g"]["correct"] and box["g"]["math_verify"] is True
