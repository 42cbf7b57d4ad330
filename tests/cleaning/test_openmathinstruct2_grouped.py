"""OpenMathInstruct-2's rule gives a batch's cot rows, then its direct rows, as zero-copy
columns when no text is null, and rows interleaved per record otherwise: the files and the
report are the row path's either way, batches of both kinds mixed in one run."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hrm_assets.cleaning import columnar
from hrm_assets.cleaning.sources import get_source
from hrm_assets.cleaning.sources.openmathinstruct2 import (
    COT,
    DIRECT,
    clean_openmathinstruct2,
    clean_openmathinstruct2_batch,
)
from tests.cleaning.test_columnar import cleaned_by_engine_and_row_path
from tests.cleaning.test_no_pandas import LIBRARIES, _run

SOURCES = ["augmented_math", "math", "augmented_gsm8k", "gsm8k", None]


def _records(count: int, nulls_below: int = 0) -> list[dict]:
    """Records whose texts are null now and then among the first ``nulls_below``."""
    return [
        {
            "problem": None if i < nulls_below and i % 7 == 3 else f"Problem {i}: {i} + 1? ü",
            "generated_solution": None if i < nulls_below and i % 11 == 5 else f"$\\boxed{{{i}}}$",
            "expected_answer": None if i < nulls_below and i % 13 == 2 else str(i + 1),
            "problem_source": SOURCES[i % len(SOURCES)],
        }
        for i in range(count)
    ]


def test_a_batch_without_nulls_gives_each_outputs_rows_together_from_the_raw_columns():
    batch = pa.RecordBatch.from_pylist(_records(40))
    cleaned = clean_openmathinstruct2_batch(batch, "default")
    rows = cleaned.rows.to_pylist()
    expected = [row for record in _records(40) for row in clean_openmathinstruct2(record, "")]
    cot = [row for row in expected if row.condition == COT]
    direct = [row for row in expected if row.condition == DIRECT]
    assert [tuple(row.values()) for row in rows] == [tuple(row) for row in cot + direct]
    assert cleaned.records.tolist() == [
        *range(40),
        *(i for i in range(40) if SOURCES[i % len(SOURCES)] not in ("math", "gsm8k")),
    ]
    # The cot rows' texts are the raw arrays themselves, not copies.
    solution = cleaned.rows.column("response").chunk(0)
    assert solution.buffers()[2].address == batch.column("generated_solution").buffers()[2].address


def test_a_batch_with_a_null_text_interleaves_rows_per_record():
    records = _records(40, nulls_below=40)
    cleaned = clean_openmathinstruct2_batch(pa.RecordBatch.from_pylist(records), "default")
    expected = [row for record in records for row in clean_openmathinstruct2(record, "")]
    assert [tuple(row.values()) for row in cleaned.rows.to_pylist()] == [
        tuple(row) for row in expected
    ]
    assert cleaned.records.tolist() == sorted(cleaned.records.tolist())


def _write_raw(raw: Path) -> None:
    folder = raw / "nvidia" / "OpenMathInstruct-2" / "data"
    folder.mkdir(parents=True)
    # Nulls in the first two batches of the first shard only: later batches are grouped.
    pq.write_table(
        pa.Table.from_pylist(_records(2300, nulls_below=700)),
        folder / "train-00000-of-00002.parquet",
        row_group_size=900,
    )
    pq.write_table(pa.Table.from_pylist(_records(1800)), folder / "train-00001-of-00002.parquet")


def test_the_engine_equals_the_row_path_with_grouped_and_interleaved_batches(tmp_path, monkeypatch):
    _write_raw(tmp_path / "raw")
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 500)
    spec = get_source("openmathinstruct2")
    one = cleaned_by_engine_and_row_path(spec, tmp_path / "raw", tmp_path)
    assert one.skipped and all(entry.examples for entry in one.skipped.values())
    assert one.files["openmathinstruct2/direct.parquet"].rows > 1000


def test_cleaning_imports_no_pandas(tmp_path):
    # pyarrow imports pandas on its first conversion of a numpy or Python value (0.4 s).
    _write_raw(tmp_path / "raw")
    result = _run(
        f"""
        import json, sys
        from hrm_assets.cleaning import columnar
        from hrm_assets.cleaning.clean import clean_source
        from hrm_assets.cleaning.sources import get_source

        columnar.COLUMNAR_BATCH_ROWS = 500
        report = clean_source(get_source("openmathinstruct2"), sys.argv[1], sys.argv[2])
        print(json.dumps({{
            "engine": report.engine,
            "skipped": sorted(report.skipped),
            "loaded": [name for name in {LIBRARIES!r} if name in sys.modules],
        }}))
        """,
        str(tmp_path / "out"),
        str(tmp_path / "raw"),
    )
    assert result["engine"] == "columnar" and result["skipped"]
    assert result["loaded"] == []
