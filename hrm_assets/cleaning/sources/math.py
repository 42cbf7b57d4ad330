"""MATH (``EleutherAI/hendrycks_math``, all subject configs, split train) -> ``math_train.jsonl``.

data_io ``pipe/clean_math_train.py``, per problem and in config order:
- a ``cot`` row: the problem as is (not stripped), the stripped solution;
- a ``direct`` row when the solution has a final answer: the content of its last ``\\boxed``
  (or, only when there is no ``\\boxed`` at all, its last ``\\fbox``), between the first ``{``
  after it and the brace that closes it, stripped; no row when that content is empty or the
  braces never close.

No deliberate differences.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.spec import Record, SourceSpec

SUBJECTS = {
    "algebra": "Algebra",
    "counting_and_probability": "Counting & Probability",
    "geometry": "Geometry",
    "intermediate_algebra": "Intermediate Algebra",
    "number_theory": "Number Theory",
    "prealgebra": "Prealgebra",
    "precalculus": "Precalculus",
}
"""Hub config name -> the ``type`` field of its records."""


def last_boxed_content(text: str) -> str | None:
    """data_io's ``_last_boxed_only_string``: the stripped content of the last box, or None.

    The scan starts at the marker and takes the first ``{`` as the opening brace (wherever it
    is) and the first point where the open-brace count returns to zero as the closing one;
    a ``}`` seen before any ``{`` drives the count negative, exactly as data_io does.
    """
    start = text.rfind("\\boxed")
    if start < 0:
        start = text.rfind("\\fbox")
        if start < 0:
            return None
    depth = 0
    opening = None
    for position in range(start, len(text)):
        char = text[position]
        if char == "{":
            depth += 1
            if opening is None:
                opening = position
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[opening + 1 : position].strip()
    return None


def clean_math(record: Record, part: str) -> Iterator[Row]:
    problem, solution = record["problem"], record["solution"]
    yield Row("cot", problem, solution.strip())
    answer = last_boxed_content(solution)
    if answer:
        yield Row("direct", problem, answer.strip())


# -- demo corpus: invented competition-style problems, one generator per subject -------------


def _algebra(rng: random.Random) -> tuple[str, str]:
    a, x, b = rng.randint(2, 9), rng.randint(-9, 12), rng.randint(1, 30)
    c = a * x + b
    return (
        f"Solve for $x$: ${a}x + {b} = {c}$.",
        f"Subtracting ${b}$ from both sides gives ${a}x = {c - b}$, so $x = \\boxed{{{x}}}$.",
    )


def _counting(rng: random.Random) -> tuple[str, str]:
    n, k = rng.randint(5, 12), rng.randint(2, 4)
    ways = 1
    for i in range(k):
        ways = ways * (n - i) // (i + 1)
    return (
        f"In how many ways can a committee of {k} be chosen from {n} people?",
        f"Order does not matter, so the answer is $\\dbinom{{{n}}}{{{k}}} = \\boxed{{{ways}}}$.",
    )


def _geometry(rng: random.Random) -> tuple[str, str]:
    base, height = 2 * rng.randint(2, 15), rng.randint(3, 20)
    area = base * height // 2
    return (
        f"A triangle has base ${base}$ cm and height ${height}$ cm. What is its area in cm$^2$?",
        f"The area is $\\frac{{1}}{{2}}\\cdot {base}\\cdot {height} = \\boxed{{{area}}}$.",
    )


def _intermediate_algebra(rng: random.Random) -> tuple[str, str]:
    r, s = rng.randint(-8, 8), rng.randint(1, 9)
    return (
        f"Find the sum of the roots of $x^2 - {r + s}x + {r * s} = 0$."
        if r + s >= 0
        else f"Find the sum of the roots of $x^2 + {-(r + s)}x + {r * s} = 0$.",
        f"By Vieta's formulas, the sum of the roots is $\\boxed{{{r + s}}}$.",
    )


def _number_theory(rng: random.Random) -> tuple[str, str]:
    a, m = rng.randint(100, 9999), rng.randint(3, 13)
    return (
        f"What is the remainder when ${a}$ is divided by ${m}$?",
        f"Since ${a} = {m}\\cdot {a // m} + {a % m}$, the remainder is $\\boxed{{{a % m}}}$.",
    )


def _prealgebra(rng: random.Random) -> tuple[str, str]:
    p, q = rng.randint(1, 9), rng.randint(10, 19)
    return (
        f"Simplify $\\frac{{{p}}}{{{q}}} + \\frac{{1}}{{{q}}}$.",
        f"The denominators agree, so the sum is $\\boxed{{\\frac{{{p + 1}}}{{{q}}}}}$.",
    )


def _precalculus(rng: random.Random) -> tuple[str, str]:
    u = [rng.randint(-5, 5) for _ in range(3)]
    v = [rng.randint(-5, 5) for _ in range(3)]
    dot = sum(a * b for a, b in zip(u, v, strict=True))
    return (
        f"Compute $\\begin{{pmatrix}} {u[0]} \\\\ {u[1]} \\\\ {u[2]} \\end{{pmatrix}} \\cdot "
        f"\\begin{{pmatrix}} {v[0]} \\\\ {v[1]} \\\\ {v[2]} \\end{{pmatrix}}$.",
        f"The dot product is ${u[0]}\\cdot{v[0]} + {u[1]}\\cdot{v[1]} + {u[2]}\\cdot{v[2]} "
        f"= \\boxed{{{dot}}}$.",
    )


_GENERATORS = {
    "algebra": _algebra,
    "counting_and_probability": _counting,
    "geometry": _geometry,
    "intermediate_algebra": _intermediate_algebra,
    "number_theory": _number_theory,
    "prealgebra": _prealgebra,
    "precalculus": _precalculus,
}

# Corner cases the cleaning rules care about: \fbox, a box without braces closing, an empty
# box, no box at all, surrounding whitespace, and non-English text.
_SPECIAL = [
    ("What is $2^{10}$?", "We have $2^{10} = \\fbox{1024}$."),
    ("Evaluate $3!$.", "$3! = 6$, so the answer is 6."),
    ("What is $0\\cdot 7$?", "It is $\\boxed{ }$ zero... that is, $0$."),
    ("Find $x$ if $x+1=2$.", "Then $x = \\boxed{1$ and the brace never closes."),
    ("  Was ist $7\\cdot 8$?  ", "\n  Es gilt $7\\cdot 8 = \\boxed{ 56 }$.  \n"),
    ("求 $1+2+\\cdots+10$ 的值。", "由等差数列求和公式得 $\\boxed{55}$。"),
    (
        "Which is larger, $\\pi$ or $\\frac{22}{7}$? 🤔",
        "Since $\\frac{22}{7} \\approx 3.1429 > 3.1416$, the answer is $\\boxed{\\frac{22}{7}}$.",
    ),
]


def demo_math(rng: random.Random) -> dict[str, list[dict]]:
    parts: dict[str, list[dict]] = {}
    for subject_index, (config, make) in enumerate(_GENERATORS.items()):
        records = []
        for index in range(40):
            if index == 13:
                problem, solution = _SPECIAL[subject_index % len(_SPECIAL)]
            else:
                problem, solution = make(rng)
            records.append(
                {
                    "problem": problem,
                    "level": f"Level {rng.randint(1, 5)}",
                    "type": SUBJECTS[config],
                    "solution": solution,
                }
            )
        parts[config] = records
    return parts


MATH_TRAIN = SourceSpec(
    name="math_train",
    hub_id="EleutherAI/hendrycks_math",
    configs=None,
    split="train",
    output="math_train.jsonl",
    format="jsonl",
    clean=clean_math,
    layout=HubLayout(),
    demo=demo_math,
    description="MATH competition problems: solutions (cot) and boxed answers (direct).",
)

SPECS = (MATH_TRAIN,)
