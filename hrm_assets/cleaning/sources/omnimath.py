"""Omni-MATH (``KbsdJames/Omni-MATH``, split ``test``) -> ``omnimath.jsonl``.

data_io ``pipe/clean_omnimath.py``, per problem: a ``cot`` row (the problem as is, the stripped
solution) then a ``direct`` row (the problem as is, the stripped answer).

Local mirror: ``KbsdJames/Omni-MATH/test.jsonl`` (the repository keeps its one JSONL file at the
top).

Deliberate difference: a record whose ``solution`` or ``answer`` is not a string makes data_io
crash (``.strip()``); it is skipped here, both rows (reason ``solution is not a string`` /
``answer is not a string``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec


def _stripped(record: Record, field: str) -> str:
    value = record[field]
    if not isinstance(value, str):
        raise SkipRecord(f"{field} is not a string", f"got {type(value).__name__}")
    return value.strip()


def clean_omnimath(record: Record, part: str) -> Iterator[Row]:
    solution, answer = _stripped(record, "solution"), _stripped(record, "answer")
    yield Row("cot", record["problem"], solution)
    yield Row("direct", record["problem"], answer)


# -- demo corpus: invented olympiad problems in the Hub schema -------------------------------

_DOMAINS = [
    ["Mathematics -> Number Theory -> Congruences"],
    ["Mathematics -> Algebra -> Polynomials"],
    ["Mathematics -> Discrete Mathematics -> Combinatorics"],
]
_CONTESTS = ["imo", "usamo", "china_national_olympiad", "putnam", "balkan_mo"]


def _record(rng: random.Random, index: int) -> dict:
    n, m = rng.randint(3, 50), rng.randint(2, 9)
    kind = index % 3
    if kind == 0:
        problem = f"Determine the remainder when $2^{{{n}}}$ is divided by ${m}$."
        answer = str(pow(2, n, m))
        solution = f"Compute powers of $2$ modulo ${m}$ and use periodicity; we get ${answer}$."
    elif kind == 1:
        problem = f"How many subsets of $\\{{1, \\ldots, {n}\\}}$ have exactly {m} elements?"
        answer = f"$\\binom{{{n}}}{{{m}}}$"
        solution = f"Choose the {m} elements among {n}: the count is {answer}."
    else:
        problem = f"Soit $P(x) = x^{m} - {n}$. Déterminer la somme des racines de $P$ dans ℂ."
        answer = "0" if m > 1 else str(n)
        solution = f"Par les relations de Viète, la somme vaut ${answer}$ (coefficient nul)."
    return {
        "domain": _DOMAINS[kind],
        "difficulty": float(rng.randint(10, 90)) / 10,
        "problem": problem + ("  " if index % 5 == 0 else ""),
        "solution": f"\n{solution}\n" if index % 4 == 1 else solution,
        "answer": f" {answer} " if index % 6 == 2 else answer,
        "source": _CONTESTS[index % len(_CONTESTS)],
    }


def demo_omnimath(rng: random.Random) -> dict[str, list[dict]]:
    return {"default": [_record(rng, index) for index in range(220)]}


OMNIMATH = SourceSpec(
    name="omnimath",
    hub_id="KbsdJames/Omni-MATH",
    configs=("default",),
    split="test",
    output="omnimath.jsonl",
    format="jsonl",
    clean=clean_omnimath,
    layout=HubLayout(config_dir="."),
    demo=demo_omnimath,
    rows_per_record=2,  # a skipped problem loses its cot row and its direct row
    description="Omni-MATH olympiad problems: solutions (cot) and answers (direct).",
)

SPECS = (OMNIMATH,)
