"""NuminaMath 1.5 (``AI-MO/NuminaMath-1.5``, split ``train``) -> ``numinamath.jsonl``.

data_io ``pipe/clean_numinamath.py``. A record is used when it is not ``synthetic``, both
``problem_is_valid`` and ``solution_is_valid`` are ``"Yes"``, ``solution`` and ``answer`` are not
null, neither the problem nor the solution contains ``http``, and the solution does not contain
``Translate the text above into English``. Then, when the stripped problem and solution are both
non-empty:
- a ``noisy,cot`` row: stripped problem, stripped solution;
- a ``noisy,direct`` row: stripped problem, stripped answer, unless ``question_type`` is
  ``proof`` or the (unstripped) answer is ``proof``, or the stripped answer is empty.

Local mirror: ``AI-MO/NuminaMath-1.5/data/train-*.parquet``.

Deliberate difference: a used record whose ``problem`` is null (or not a string) makes data_io
crash (``"http" in None``); it is skipped here with reason ``problem is not a string``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec

TRANSLATION_ARTIFACT = "Translate the text above into English"
BAD_PROBLEM = "problem is not a string"


def is_usable(record: Record) -> bool:
    """data_io's record filter on flags and nulls (before any text is looked at)."""
    return (
        not record["synthetic"]
        and record["problem_is_valid"] == "Yes"
        and record["solution_is_valid"] == "Yes"
        and record["solution"] is not None
        and record["answer"] is not None
    )


def clean_numinamath(record: Record, part: str) -> Iterator[Row]:
    if not is_usable(record):
        return
    problem, solution, answer = record["problem"], record["solution"], record["answer"]
    if not isinstance(problem, str):
        raise SkipRecord(BAD_PROBLEM, f"got {type(problem).__name__}")
    if "http" in problem or "http" in solution or TRANSLATION_ARTIFACT in solution:
        return
    problem, solution = problem.strip(), solution.strip()
    if not (problem and solution):
        return
    yield Row("noisy,cot", problem, solution)
    if record["question_type"] != "proof" and answer != "proof":
        answer = answer.strip()
        if answer:
            yield Row("noisy,direct", problem, answer)


# -- demo corpus: invented olympiad-style problems in the Hub schema -------------------------

_SOURCES = ["olympiads", "cn_contest", "aops_forum", "amc_aime", "inequalities", "number_theory"]


def _problem(rng: random.Random, index: int) -> dict:
    a, b = rng.randint(2, 30), rng.randint(2, 30)
    kind = index % 4
    if kind == 0:
        problem = f"Find all real $x$ such that $x^2 - {a + b}x + {a * b} = 0$."
        solution = f"The equation factors as $(x-{a})(x-{b})=0$, so $x={a}$ or $x={b}$."
        answer, question_type = f"{min(a, b)}, {max(a, b)}", "math-word-problem"
    elif kind == 1:
        problem = f"Prove that ${a}^2 + {b}^2 \\geq 2\\cdot {a}\\cdot {b}$."
        solution = f"Indeed ${a}^2 + {b}^2 - 2\\cdot{a}\\cdot{b} = ({a}-{b})^2 \\geq 0$."
        answer, question_type = "proof", "proof"
    elif kind == 2:
        problem = f"已知正整数 $n$ 满足 $n \\equiv {a % 7} \\pmod 7$，且 $n < 7$。求 $n$。"
        solution = f"由条件直接得 $n = {a % 7}$。"
        answer, question_type = f"{a % 7}", "math-word-problem"
    else:
        problem = f"Which is larger: ${a}^{{{b}}}$ or ${b}^{{{a}}}$? (A) the first (B) the second"
        bigger = "A" if a**b > b**a else "B"
        solution = f"Comparing logarithms, ${b}\\ln {a}$ vs ${a}\\ln {b}$ gives ({bigger})."
        answer, question_type = bigger, "MCQ"
    return {
        "problem": f"  {problem}\n" if index % 7 == 2 else problem,
        "solution": solution,
        "answer": answer,
        "problem_type": "Algebra",
        "question_type": question_type,
        "problem_is_valid": "Yes",
        "solution_is_valid": "Yes",
        "source": _SOURCES[index % len(_SOURCES)],
        "synthetic": False,
    }


def demo_numinamath(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    for index in range(320):
        record = _problem(rng, index)
        corner = index % 23
        if corner == 3:
            record["synthetic"] = True
        elif corner == 6:
            record["problem_is_valid"] = "No"
        elif corner == 9:
            record["solution"] = None
        elif corner == 12:
            record["solution"] += " See https://example.org/figure.png"
        elif corner == 15:
            record["solution"] += f"\n\n{TRANSLATION_ARTIFACT}, please keep the line breaks."
        elif corner == 18:
            record["answer"] = "   "
        records.append(record)
    return {"default": records}


NUMINAMATH = SourceSpec(
    name="numinamath",
    hub_id="AI-MO/NuminaMath-1.5",
    configs=("default",),
    split="train",
    output="numinamath.jsonl",
    format="jsonl",
    clean=clean_numinamath,
    layout=HubLayout(config_dir="data"),
    demo=demo_numinamath,
    description="NuminaMath-1.5 human problems: solutions (noisy,cot) and answers (noisy,direct).",
)

SPECS = (NUMINAMATH,)
