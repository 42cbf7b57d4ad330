"""SYNTH's columnar rule where the rows it keeps are one run: a batch kept whole, or one
stretch of it (``clean_synth_batch`` slices the batch instead of copying the rows, and hands
on the queries themselves when no kept row is ``rag``).

The fixtures are SYNTHETIC, in the Hub's column names: runs of English rows between
filtered ones, with and without ``rag`` rows, a null query in a run; the row path (the spec
without its rule) is the reference, at 1 and 2 threads, files and report.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning import columnar
from hrm_assets.cleaning.sources import get_source
from hrm_assets.cleaning.sources import synth as synth_module
from tests.cleaning.test_columnar import cleaned_by_engine_and_row_path

BATCH_ROWS = 100


def record(index: int, exercise: str, kept: bool) -> dict:
    return {
        "synth_id": f"s{index}",
        "language": "en" if kept else "fr",
        "exercise": exercise,
        "query": None if index == 137 else f"Query {index} ö",
        "query_seed_url": "https://en.wikipedia.org/wiki/X",
        "constraints": f"\n\nConstraint {index}.",
        "synthetic_reasoning": "r",
        "synthetic_answer": f"Answer {index}.",
    }


def write_runs(raw: Path) -> None:
    """Two files of 100-row batches: kept whole (no rag; then with rag rows), kept in one
    stretch in the middle, kept but for its first row, and kept in two stretches."""
    exercises = ["mcq", "math exercise", "editing"]
    shapes = [
        (range(0, 100), exercises),
        (range(100, 200), [*exercises, "rag"]),
        (range(230, 270), ["rag", "memorization"]),
        (range(301, 400), ["summarization", "mcq"]),
        ([*range(400, 420), *range(450, 500)], ["rag", "creative writing"]),
    ]
    records = []
    for kept, names in shapes:
        start = len(records)
        kept = set(kept)
        for index in range(start, start + BATCH_ROWS):
            records.append(record(index, names[index % len(names)], index in kept))
    folder = raw / "SYNTH"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(records[:300]), folder / "synth_0.parquet")
    pq.write_table(pa.Table.from_pylist(records[300:]), folder / "synth_1.parquet")


def test_kept_runs_equal_the_row_path_at_one_and_two_threads(tmp_path, monkeypatch):
    write_runs(tmp_path / "raw")
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", BATCH_ROWS)
    report = cleaned_by_engine_and_row_path(get_source("synth"), tmp_path / "raw", tmp_path)
    # 100 + 100 + 40 + 99 + 70 kept, the null query skipped.
    assert report.rows_written == 408
    assert report.skipped[synth_module.NULL_TEXT].count == 1


@pytest.mark.parametrize(
    "kept, sliced",
    [(range(0, 8), True), (range(3, 6), True), ([1, 2, 4], False), ([], False)],
)
def test_one_run_of_kept_rows_is_a_slice_of_the_batch(kept, sliced):
    batch = pa.RecordBatch.from_pylist([record(i, "mcq", i in kept) for i in range(8)])
    cleaned = synth_module.clean_synth_batch(batch, "synth_0.parquet")
    # A slice shares the raw column's text buffer; a take copies the texts into a new one.
    texts = cleaned.rows.column("instruction").chunk(0).buffers()[2]
    shares = texts is not None and texts.address == batch.column("query").buffers()[2].address
    assert shares is sliced
    assert cleaned.records.tolist() == list(kept)
    assert cleaned.rows.column("instruction").to_pylist() == [f"Query {i} ö" for i in kept]
