"""OpenMathInstruct-2 (``nvidia/OpenMathInstruct-2``, split ``train``), two Parquet files.

data_io ``pipe_clustered/clean_openmathinstruct2.py``, per record and nothing stripped:
- ``openmathinstruct2/cot.parquet``: a ``synth,cot`` row, ``problem`` -> ``generated_solution``;
- ``openmathinstruct2/direct.parquet``: a ``synth,direct`` row, ``problem`` ->
  ``expected_answer``, only for problems made up by the generator (``problem_source`` is not
  ``math`` nor ``gsm8k``: those original problems' answers are in their own sources).

Both files are always written, as data_io does. Local mirror:
``nvidia/OpenMathInstruct-2/data/train-*.parquet`` (the ``train_1M``/``train_2M``/``train_5M``
subsets beside them are other splits and are not read).

Cleaned on columns (:func:`clean_openmathinstruct2_batch`) when the mirror is Parquet. Each
file gets its rows in record order, as the per-record rule gives them; within a batch the
``cot`` rows come first, then the ``direct`` rows (see the function for why and when).

Deliberate difference: data_io would write a null field into its Parquet as a null; here such
a row is counted as skipped by the row validation (``field missing or not a string``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hrm_assets.cleaning.arrow_buffers import index_array, string_array, true_flags
from hrm_assets.cleaning.columnar import (
    CleanedBatch,
    ColumnarRule,
    constant,
    require_text_columns,
    rows_table,
    text,
)
from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.spec import Record, SourceSpec

ORIGINAL_SOURCES = frozenset({"math", "gsm8k"})
COLUMNS = ("problem", "generated_solution", "expected_answer", "problem_source")
COT, DIRECT = "synth,cot", "synth,direct"


def clean_openmathinstruct2(record: Record, part: str) -> Iterator[Row]:
    yield Row(COT, record["problem"], record["generated_solution"])
    if record["problem_source"] not in ORIGINAL_SOURCES:
        yield Row(DIRECT, record["problem"], record["expected_answer"])


def clean_openmathinstruct2_batch(batch, part: str) -> CleanedBatch:
    """:func:`clean_openmathinstruct2` on a record batch: every record's cot row, and its
    direct row when its problem is not an original one (a null ``problem_source`` is not one,
    as ``None not in ORIGINAL_SOURCES``).

    The batch's cot rows come first, as the raw columns themselves, then its direct rows: each
    output's rows are a zero-copy slice for its writer, where rows interleaved per record were
    copied twice more (into that order, then apart again per output), about a third of the
    engine's work on this source. Each file's rows, the report and its examples are the same:
    the engine groups rows by output keeping their order. When a text is null (the engine
    rejects such rows one by one, numbering them in batch order), the rows are interleaved per
    record as the row path gives them, so the examples of rejected rows keep its order too."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    count = batch.num_rows
    original = pc.is_in(
        text(batch.column("problem_source")), value_set=string_array(sorted(ORIGINAL_SOURCES))
    )
    direct = np.flatnonzero(~true_flags(original))
    take_direct = index_array(direct)
    problem = text(batch.column("problem"))
    solution = text(batch.column("generated_solution"))
    answer = text(batch.column("expected_answer")).take(take_direct)
    conditions = [constant(COT, count), constant(DIRECT, len(direct))]
    instructions = [problem, problem.take(take_direct)]
    responses = [solution, answer]
    if problem.null_count or solution.null_count or answer.null_count:
        # Row keys 2*record (cot) and 2*record + 1 (direct): sorted, they interleave per record.
        keys = np.concatenate((np.arange(count, dtype=np.int64) * 2, direct * 2 + 1))
        order = index_array(np.argsort(keys, kind="stable"))
        rows = rows_table(
            *(
                pa.concat_arrays(column).take(order)
                for column in (conditions, instructions, responses)
            )
        )
        return CleanedBatch(rows=rows, records=np.sort(keys) // 2)
    rows = pa.table(
        {
            "condition": pa.chunked_array(conditions, pa.string()),
            "instruction": pa.chunked_array(instructions, pa.string()),
            "response": pa.chunked_array(responses, pa.string()),
        }
    )
    return CleanedBatch(rows=rows, records=np.concatenate((np.arange(count), direct)))


OPENMATHINSTRUCT2_COLUMNAR = ColumnarRule(
    columns=COLUMNS,
    clean=clean_openmathinstruct2_batch,
    check_schema=lambda schema: require_text_columns(schema, COLUMNS),
)


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
        (COT, "openmathinstruct2/cot.parquet"),
        (DIRECT, "openmathinstruct2/direct.parquet"),
    ),
    columnar=OPENMATHINSTRUCT2_COLUMNAR,
    description="OpenMathInstruct-2 solutions (synth,cot) and answers of generated problems "
    "(synth,direct).",
)

SPECS = (OPENMATHINSTRUCT2,)
