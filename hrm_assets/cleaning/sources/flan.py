"""FLAN collection (local ``FLAN/<subset>/*.parquet``, an ``hf download`` of Open-Orca/FLAN) ->
``flan/<subset>__<safe task name>.parquet``.

data_io ``pipe_clustered/clean_flan.py``: for each included subset (the twelve ``direct`` ones,
then ``cot_fsopt_data`` and ``cot_zsopt_data`` as ``cot``), every row of every
``<subset>/*.parquet`` file gives a row with the subset's condition, ``str(inputs)`` as
instruction and ``str(targets)`` as response (not stripped), written to one file per task:
``flan/<subset>__<safe_filename(str(_task_name))>.parquet``, rows in read order.

data_io collects a whole subset in memory before writing; here the columnar rule
(:func:`clean_flan_batch`) cleans record batches, the engine groups each batch's rows by task
file and keeps them within a memory budget (then a spill file) until the subset is read, and
writes the task files one after the other (``hrm_assets.cleaning.columnar_clean``). Subsets are
cleaned in parallel. A raw file whose columns are not text is cleaned row by row
(:func:`clean_flan`, ``str()`` of each cell, as data_io).

Deliberate differences:
- ``str()`` of a null cell is ``"None"``: data_io writes such rows with the text ``None`` (or
  into a task file called ``None``); here a row with a null ``inputs``, ``targets`` or
  ``_task_name`` is skipped and reported (reason ``null inputs, targets or task name``).
- Two task names with the same safe name (``a:b`` and ``a_b``) make data_io overwrite one task's
  file with the other's; here both tasks' rows go to the one file.
- data_io takes ``glob`` order for a subset's files; they are read sorted by name.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable, Iterator
from pathlib import Path

from hrm_assets.cleaning.columnar import (
    BatchSkip,
    CleanedBatch,
    ColumnarRule,
    constant,
    null_mask,
    null_names,
    require_text_columns,
    rows_table,
    text,
)
from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row
from hrm_assets.cleaning.sources.local_files import (
    LocalLayout,
    glob_files,
    parquet_record_batches,
    safe_filename,
    write_parquet_records,
)
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec

SUBSETS: dict[str, str] = {
    **dict.fromkeys(
        (
            # few-shot
            "dialog_fsopt_data",
            "flan_fsopt_data",
            "flan_fsnoopt_data",
            "niv2_fsopt_data",
            "t0_fsopt_data",
            "t0_fsnoopt_data",
            # zero-shot
            "dialog_zsopt_data",
            "flan_zsopt_data",
            "flan_zsnoopt_data",
            "niv2_zsopt_data",
            "t0_zsopt_data",
            "t0_zsnoopt_data",
        ),
        "direct",
    ),
    "cot_fsopt_data": "cot",
    "cot_zsopt_data": "cot",
}
"""Subset folder -> condition, in data_io's order."""

COLUMNS = ("_task_name", "inputs", "targets")
NULL_FIELD = "null inputs, targets or task name"
FLAN_FOLDER = "flan"


class FlanLayout(LocalLayout):
    folder = "FLAN"
    pattern = "<subset>/*.parquet"
    download_hint = "hf download Open-Orca/FLAN --repo-type dataset --local-dir <raw root>/FLAN"

    def part_files(self, spec: SourceSpec, root: Path) -> list[tuple[str, list[Path]]]:
        # A subset without files gives nothing, as in data_io (its glob finds nothing).
        return [(subset, glob_files(root / subset, "*.parquet")) for subset in SUBSETS]

    def read_batches(self, path: Path, part: str, batch_size: int) -> Iterator[list[Record]]:
        return parquet_record_batches(path, batch_size, COLUMNS)

    def write_part(self, root: Path, part: str, records: Iterable[Record]) -> list[Path]:
        return [write_parquet_records(root / part / "part.0.parquet", records)]


def _check(record: Record) -> None:
    nulls = [name for name in COLUMNS if record[name] is None]
    if nulls:
        raise SkipRecord(NULL_FIELD, f"null {', '.join(nulls)}")


def route_flan(record: Record, part: str) -> str:
    _check(record)
    return f"flan/{part}__{safe_filename(str(record['_task_name']))}.parquet"


def clean_flan(record: Record, part: str) -> Iterator[Row]:
    _check(record)
    yield Row(SUBSETS[part], str(record["inputs"]), str(record["targets"]))


@functools.lru_cache(maxsize=1 << 16)
def _task_file(part: str, task: str) -> str:
    # Every batch names the same tasks again: their file names are worked out once.
    return f"{FLAN_FOLDER}/{part}__{safe_filename(task)}.parquet"


def clean_flan_batch(batch, part: str) -> CleanedBatch:
    """:func:`clean_flan` and :func:`route_flan` on a record batch: rows with a null cell
    skipped, the others routed by their task's safe name, in read order."""
    import numpy as np

    from hrm_assets.cleaning.arrow_buffers import boolean_array, integers

    nulls = null_mask(batch, COLUMNS)
    kept = batch.filter(boolean_array(~nulls)) if nulls.any() else batch
    tasks = text(kept.column("_task_name")).dictionary_encode()
    names = [_task_file(part, task) for task in tasks.dictionary.to_pylist()]
    return CleanedBatch(
        rows=rows_table(
            constant(SUBSETS[part], kept.num_rows), kept.column("inputs"), kept.column("targets")
        ),
        records=np.flatnonzero(~nulls),
        route_names=names,
        route_codes=integers(tasks.indices),
        skips=[
            BatchSkip(
                NULL_FIELD,
                np.flatnonzero(nulls),
                detail=lambda row: f"null {', '.join(null_names(batch, COLUMNS, row))}",
                output=lambda _row: FLAN_FOLDER,
            )
        ],
    )


FLAN_COLUMNAR = ColumnarRule(
    columns=COLUMNS,
    clean=clean_flan_batch,
    check_schema=lambda schema: require_text_columns(schema, COLUMNS),
)


# -- demo corpus: invented FLAN-style tasks, in the Hub schema ---------------------------------

_CITIES = ["Paris", "Kraków", "São Paulo", "Reykjavík", "Nairobi", "Kyoto", "Montréal", "Lima"]


def _sentiment(rng: random.Random, index: int) -> tuple[str, str, str]:
    city = rng.choice(_CITIES)
    good = rng.random() < 0.5
    review = f"The café in {city} was {'wonderful' if good else 'awful'}."
    return (
        "glue/sst2:2.0.0",
        f"Review: {review}\nIs this review positive or negative?",
        ("positive" if good else "negative"),
    )


def _translate(rng: random.Random, index: int) -> tuple[str, str, str]:
    n = rng.randint(2, 9)
    return (
        "wmt16_translate/de-en:1.0.0",
        f"Translate to German: I have {n} apples.",
        (f"Ich habe {n} Äpfel."),
    )


def _arithmetic_cot(rng: random.Random, index: int) -> tuple[str, str, str]:
    a, b = rng.randint(2, 30), rng.randint(2, 30)
    return (
        "cot_gsm8k",
        (f"Mia has {a} pencils and buys {b} more. How many now? Let's think step by step."),
        f"{a} + {b} = {a + b}. The answer: {a + b}.",
    )


def _qa(rng: random.Random, index: int) -> tuple[str, str, str]:
    city = _CITIES[index % len(_CITIES)]
    return "task1290_qa→answer", f"Question: In which country is {city}?\nAnswer:", f"{city} ✓"


_TASKS = {"direct": [_sentiment, _translate, _qa], "cot": [_arithmetic_cot, _qa]}
_DEMO_SUBSETS = ("flan_fsopt_data", "niv2_zsopt_data", "t0_zsnoopt_data", "cot_fsopt_data")


def demo_flan(rng: random.Random) -> dict[str, list[dict]]:
    parts = {}
    for subset in _DEMO_SUBSETS:
        makers = _TASKS[SUBSETS[subset]]
        records = []
        for index in range(60):
            task, inputs, targets = makers[index % len(makers)](rng, index)
            if index % 5 == 0:  # every task gets some non-ASCII instructions
                inputs = f"Répondez en français. {inputs}"
            records.append(
                {
                    "inputs": inputs,
                    "targets": targets,
                    "_template_type": "zs_opt",
                    "_task_source": task.split("/")[0],
                    "_task_name": task,
                    "_template_idx": index % 10,
                }
            )
        parts[subset] = records
    return parts


FLAN = SourceSpec(
    name="flan",
    hub_id="Open-Orca/FLAN",
    configs=None,
    split="train",
    output=FLAN_FOLDER,
    format="parquet",
    columns=INSTRUCTION_FIRST,
    clean=clean_flan,
    layout=FlanLayout(),
    demo=demo_flan,
    route=route_flan,
    columnar=FLAN_COLUMNAR,
    description="FLAN collection: one file per subset and task (direct; cot for CoT subsets).",
)

SPECS = (FLAN,)
