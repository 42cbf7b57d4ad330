"""OpenMathInstruct-2 (``nvidia/OpenMathInstruct-2``, split ``train``), two Parquet files.

data_io ``pipe_clustered/clean_openmathinstruct2.py``, per record and nothing stripped:
- ``openmathinstruct2/cot.parquet``: a ``synth,cot`` row, ``problem`` -> ``generated_solution``;
- ``openmathinstruct2/direct.parquet``: a ``synth,direct`` row, ``problem`` ->
  ``expected_answer``, only for problems made up by the generator (``problem_source`` is not
  ``math`` nor ``gsm8k``: those original problems' answers are in their own sources).

Both files are always written, as data_io does. Local mirror:
``nvidia/OpenMathInstruct-2/data/train-*.parquet`` (the ``train_1M``/``train_2M``/``train_5M``
subsets beside them are other splits and are not read).

Deliberate difference: data_io would write a null field into its Parquet as a null; here such
a row is counted as skipped by the row validation (``field missing or not a string``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.spec import Record, SourceSpec

ORIGINAL_SOURCES = frozenset({"math", "gsm8k"})


def clean_openmathinstruct2(record: Record, part: str) -> Iterator[Row]:
    yield Row("synth,cot", record["problem"], record["generated_solution"])
    if record["problem_source"] not in ORIGINAL_SOURCES:
        yield Row("synth,direct", record["problem"], record["expected_answer"])


# -- demo corpus: invented problems and solutions in the Hub schema --------------------------

_SOURCES = ["augmented_math", "augmented_gsm8k", "math", "gsm8k"]


def _record(rng: random.Random, index: int) -> dict:
    a, b = rng.randint(2, 60), rng.randint(2, 60)
    source = _SOURCES[index % len(_SOURCES)]
    if index % 3 == 0:
        problem = f"Emma has {a} stickers and buys {b} more. How many stickers does she have?"
        answer = str(a + b)
        solution = f"Emma has ${a} + {b} = {a + b}$ stickers.\n\nAnswer: $\\boxed{{{answer}}}$."
    elif index % 3 == 1:
        problem = f"Let $f(x) = {a}x - {b}$. Find $f^{{-1}}({a * 2 - b})$."
        answer = "2"
        solution = (
            f"Solving ${a}x - {b} = {a * 2 - b}$ gives $x = 2$, so "
            f"$f^{{-1}}({a * 2 - b}) = \\boxed{{2}}$."
        )
    else:
        problem = f"Un rectangle mesure {a} cm sur {b} cm. Quelle est son aire, en cm² ?"
        answer = str(a * b)
        solution = f"L'aire vaut ${a} \\times {b} = {a * b}$, donc $\\boxed{{{answer}}}$."
    return {
        "problem": problem,
        "generated_solution": solution,
        "expected_answer": answer,
        "problem_source": source,
    }


def demo_openmathinstruct2(rng: random.Random) -> dict[str, list[dict]]:
    return {"default": [_record(rng, index) for index in range(240)]}


OPENMATHINSTRUCT2 = SourceSpec(
    name="openmathinstruct2",
    hub_id="nvidia/OpenMathInstruct-2",
    configs=("default",),
    split="train",
    output="openmathinstruct2",
    format="parquet",
    columns=INSTRUCTION_FIRST,
    clean=clean_openmathinstruct2,
    layout=HubLayout(config_dir="data"),
    demo=demo_openmathinstruct2,
    outputs_by_condition=(
        ("synth,cot", "openmathinstruct2/cot.parquet"),
        ("synth,direct", "openmathinstruct2/direct.parquet"),
    ),
    description="OpenMathInstruct-2 solutions (synth,cot) and answers of generated problems "
    "(synth,direct).",
)

SPECS = (OPENMATHINSTRUCT2,)
