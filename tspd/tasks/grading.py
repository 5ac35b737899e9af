"""Answer extraction and comparison: GSM8K final numbers and MATH ``\\boxed{}`` expressions.

GSM8K follows lm-eval's ``gsm8k`` task (v3.0): *strict* takes the first ``#### N`` (we also accept
``The answer is N`` when there is no ``####``), *flexible* takes the last number-like span of the text.
Both sides are normalised as lm-eval does (commas, ``$``, a trailing ``.``, case) and compared as strings.

MATH takes the last ``\\boxed{...}`` (or ``\\fbox{...}``) with balanced braces and compares it with the
reference answer twice: with ``math_verify`` (symbolic, the maintained Hugging Face checker) and with a
string normalisation of the usual LaTeX noise. Either match counts as correct; both are reported.
"""
from __future__ import annotations

import re
import threading

# --------------------------------------------------------------------------------------------
# GSM8K
# --------------------------------------------------------------------------------------------
_STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")                        # lm-eval "strict-match"
_ANSWER_IS = re.compile(r"[Tt]he (?:final )?answer is:?\s*\$?\s*(-?[0-9][0-9\.,]*)")
_FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")              # lm-eval "flexible-extract"


def normalize_number(text: str | None) -> str | None:
    """lm-eval's GSM8K normalisation: drop commas, ``$``, everything up to ``#### ``, trailing dots."""
    if text is None:
        return None
    s = text.split("#### ")[-1]
    s = s.replace(",", "").replace("$", "").strip().rstrip(".").strip()
    return s.lower()


def gsm8k_strict(text: str) -> str | None:
    """The first ``#### N``, else the last ``The answer is N``; None when neither occurs."""
    m = _STRICT.search(text)
    if m:
        return m.group(1)
    hits = _ANSWER_IS.findall(text)
    return hits[-1] if hits else None


def gsm8k_flexible(text: str) -> str | None:
    """The last number-like span (lm-eval's flexible-extract), or None."""
    hits = [m.group(0) for m in _FLEXIBLE.finditer(text)]
    return hits[-1] if hits else None


def gsm8k_reference(answer_field: str) -> str:
    """The gold number of a GSM8K ``answer`` field (the text after ``####``), normalised."""
    if "####" not in answer_field:
        raise ValueError(f"GSM8K answer has no '####': {answer_field[-60:]!r}")
    return normalize_number(answer_field.split("####")[-1])


def grade_gsm8k(completion: str, answer_field: str) -> dict:
    """Both lm-eval filters. ``correct`` is flexible-extract; ``correct_strict`` the strict match."""
    gold = gsm8k_reference(answer_field)
    strict, flexible = gsm8k_strict(completion), gsm8k_flexible(completion)
    ok_strict = normalize_number(strict) == gold
    ok_flexible = normalize_number(flexible) == gold
    if ok_flexible:
        reason = None
    elif flexible is None:
        reason = "no number in the output"
    else:
        reason = f"wrong answer: got {normalize_number(flexible)}, expected {gold}"
    return {"correct": ok_flexible, "reason": reason, "extracted": normalize_number(flexible),
            "correct_strict": ok_strict, "extracted_strict": normalize_number(strict), "gold": gold}


# --------------------------------------------------------------------------------------------
# MATH: extraction
# --------------------------------------------------------------------------------------------
_BOX = re.compile(r"\\(?:boxed|fbox)\b")


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}`` (balanced braces), or of ``\\boxed 5``.

    Returns None if there is no box or its braces never close.
    """
    starts = [m.end() for m in _BOX.finditer(text)]
    for start in reversed(starts):
        rest = text[start:]
        stripped = rest.lstrip()
        if stripped.startswith("{"):
            content = _balanced(stripped)
            if content is not None:
                return content
        elif rest[:1].isspace():          # "\boxed 5": up to the next space or '$'
            m = re.match(r"\s*([^\s$]+)", rest)
            if m:
                return m.group(1)
    return None


def _balanced(s: str) -> str | None:
    """``s`` starts with ``{``: the text up to its matching ``}`` (backslash-escaped braces skipped)."""
    depth = 0
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return s[1:i]
        i += 1
    return None


# --------------------------------------------------------------------------------------------
# MATH: string normalisation (fallback comparison)
# --------------------------------------------------------------------------------------------
_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\[,;:! ]|\\quad|\\qquad|\\displaystyle")
_DEGREES = re.compile(r"\^\s*\{?\\circ\}?")
_THOUSANDS = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_FRAC_SHORT = re.compile(r"\\frac(\d)(\d)")           # \frac12 -> \frac{1}{2}
_FRAC_HALF = re.compile(r"\\frac\{([^{}]*)\}(\d)")      # \frac{a}2 -> \frac{a}{2}
_FRAC_HALF2 = re.compile(r"\\frac(\d)\{")               # \frac1{b} -> \frac{1}{b}
_SQRT_SHORT = re.compile(r"\\sqrt(\w)")                # \sqrt2 -> \sqrt{2}
_LHS = re.compile(r"^[a-zA-Z](?:_\{?\w+\}?)?=")          # "x=" / "x_1=" in front of a value


def normalize_math(answer: str) -> str:
    """A canonical string for LaTeX answers: drops sizing, spacing, units wrappers, ``$``, degrees.

    Conservative: it only removes notation that never changes the value (plus ``x =`` prefixes).
    """
    s = answer.strip()
    s = s.replace("\n", "").replace("\\!", "")
    s = re.sub(r"\\left|\\right", "", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = _SPACING.sub("", s)
    prev = None
    while prev != s:                     # nested \text{\textbf{..}}
        prev, s = s, _TEXT_WRAPPERS.sub(r"\1", s)
    s = _DEGREES.sub("", s)
    s = s.replace("\\%", "").replace("%", "").replace("\\$", "").replace("$", "")
    s = s.replace("{,}", "")              # 10{,}000
    s = s.replace(" ", "")
    s = s.rstrip(".")
    s = _LHS.sub("", s)
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    s = _FRAC_SHORT.sub(r"\\frac{\1}{\2}", s)
    s = _FRAC_HALF.sub(r"\\frac{\1}{\2}", s)
    s = _FRAC_HALF2.sub(r"\\frac{\1}{", s)
    s = _SQRT_SHORT.sub(r"\\sqrt{\1}", s)
    if s.startswith("."):
        s = "0" + s
    s = re.sub(r"(?<![\d.])\.(\d)", r"0.\1", s)
    if re.fullmatch(r"-?\d+\.0+", s):    # 5.00 -> 5
        s = s.split(".")[0]
    return s


# --------------------------------------------------------------------------------------------
# MATH: comparison
# --------------------------------------------------------------------------------------------
_VERIFY_SECONDS = 5   # math_verify's own per-call limit (signal.alarm: main thread only)


def math_verify_equal(pred: str, gold: str) -> bool | None:
    """``math_verify`` equivalence of two answers (without ``$``/box), or None if it cannot parse one."""
    from math_verify import parse, verify
    timeout = _VERIFY_SECONDS if threading.current_thread() is threading.main_thread() else None
    try:
        g = parse("\\boxed{" + gold + "}", parsing_timeout=timeout)
        p = parse("\\boxed{" + pred + "}", parsing_timeout=timeout)
        if not g or not p:
            return None
        return bool(verify(g, p, timeout_seconds=timeout))
    except Exception:   # math_verify raises assorted sympy errors on odd input: count as "no verdict"
        return None


def grade_math(completion: str, gold: str) -> dict:
    """Grade a MATH completion against the reference answer (the content of its ``\\boxed{}``)."""
    pred = last_boxed(completion)
    if pred is None:
        return {"correct": False, "reason": "no \\boxed{} answer in the output", "extracted": None,
                "math_verify": None, "string_match": False, "gold": gold}
    string_ok = normalize_math(pred) == normalize_math(gold)
    mv = math_verify_equal(pred, gold)
    correct = string_ok or bool(mv)
    reason = None if correct else f"not equivalent: got {pred!r}, expected {gold!r}"
    return {"correct": correct, "reason": reason, "extracted": pred, "math_verify": mv,
            "string_match": string_ok, "gold": gold}
