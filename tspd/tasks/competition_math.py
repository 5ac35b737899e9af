"""MATH (Hendrycks et al.): the full 5000-problem test split (``math``) and MATH-500 (``math500``).

4-shot, Minerva-style ``Problem:`` / ``Solution:`` prompt whose worked examples (written for this
package) end with the answer in ``\\boxed{}``. Stop: ``Problem:``. Grading: the last ``\\boxed{}`` of the
completion against the reference answer (MATH-500's ``answer`` field; for the full set the last
``\\boxed{}`` of the reference solution), see :func:`tspd.tasks.grading.grade_math`.
"""
from __future__ import annotations

from tspd.tasks import grading
from tspd.tasks.base import Task
from tspd.tasks.data import TaskDataError, data_file, load_hub, read_data

# Four worked examples: a linear equation, a counting fact, a fraction and an interval answer, so
# the model sees integers, fractions and set notation inside \boxed{}.
FEWSHOT = (
    ("Solve for $x$: $5x - 8 = 3x + 6$.",
     "Subtracting $3x$ from both sides gives $2x - 8 = 6$, so $2x = 14$ and $x = \\boxed{7}$."),
    ("How many positive divisors does $72$ have?",
     "Since $72 = 2^3 \\cdot 3^2$, a divisor is $2^a 3^b$ with $0 \\le a \\le 3$ and $0 \\le b \\le 2$. "
     "There are $(3+1)(2+1) = \\boxed{12}$ positive divisors."),
    ("Compute $\\frac{3}{4} - \\frac{1}{6}$. Express your answer as a common fraction.",
     "With the common denominator $12$, $\\frac{3}{4} - \\frac{1}{6} = \\frac{9}{12} - \\frac{2}{12} "
     "= \\boxed{\\frac{7}{12}}$."),
    ("What is the domain of the function $g(x) = \\sqrt{10 - 2x}$? Express your answer in interval notation.",
     "The square root is defined when $10 - 2x \\ge 0$, that is when $x \\le 5$. "
     "So the domain is $\\boxed{(-\\infty, 5]}$."),
)
FEWSHOT_DELIMITER = "\n\n"


def _block(problem: str, solution: str | None = None) -> str:
    head = f"Problem:\n{problem}\n\nSolution:"
    return head if solution is None else f"{head}\n{solution}"


class _MathTask(Task):
    stop = ("Problem:",)
    file: str = ""
    hub_split: str = "test"

    def _load(self) -> list[dict]:
        if self.source:
            rows = load_hub(self.source, self.hub_split)
        else:
            rows = read_data(data_file(self.data_dir, self.file))
        out = []
        for i, r in enumerate(rows):
            answer = r.get("answer") or grading.last_boxed(r["solution"])
            if answer is None:
                raise TaskDataError(f"{self.name}: problem {r.get('unique_id', i)} has no answer and "
                                    f"no \\boxed{{}} in its solution")
            out.append({"id": r.get("unique_id") or f"{self.name}/{i}", "problem": r["problem"],
                        "solution": r["solution"], "answer": answer,
                        "level": r.get("level"), "subject": r.get("subject") or r.get("type")})
        return out

    def prompt_text(self, sample: dict) -> str:
        shots = [_block(p, s) for p, s in FEWSHOT]
        return FEWSHOT_DELIMITER.join(shots + [_block(sample["problem"])])

    def reference_completion(self, sample: dict) -> str:
        return sample["solution"]

    def grade(self, sample: dict, completion: str) -> dict:
        return grading.grade_math(completion, sample["answer"])


class MATH(_MathTask):
    """All 5000 MATH test problems; the answer is the last ``\\boxed{}`` of the reference solution."""
    name = "math"
    file = "math/test.jsonl"


class MATH500(_MathTask):
    """The 500-problem MATH subset of PRM800K (``answer`` field given)."""
    name = "math500"
    file = "math/math500.jsonl"
