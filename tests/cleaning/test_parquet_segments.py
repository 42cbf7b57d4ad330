"""Rows gathered apart in a ``ParquetSegment`` (a later file of a part, read on another thread)
and appended to a ``ParquetRowWriter`` make the file of writing every row through the writer:
data_io's bytes, whatever the writer or the segments spilled, wherever the rows cross a row
group or an Arrow chunk, and each spilled row is spilled once (the writer reads a segment's
spill file mapped).

Rows are SYNTHETIC, generated here."""

from __future__ import annotations

import contextlib
import random
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

from hrm_assets.cleaning.cleaned_parquet import BufferBudget, ParquetRowWriter, ParquetSegment
from hrm_assets.cleaning.rows import FIELDS
from tests.cleaning.test_parquet_spill import (
    INSTRUCTION_FIRST,
    _batches,
    _columns,
    _data_io_bytes,
    _text,
)


def _split(columns: dict[str, list[str]], cuts: list[int]) -> list[dict[str, list[str]]]:
    edges = [0, *cuts, len(columns["condition"])]
    return [
        {name: values[a:b] for name, values in columns.items()}
        for a, b in zip(edges, edges[1:], strict=False)
    ]


@pytest.mark.parametrize("seed", range(10))
def test_appended_segments_give_the_bytes_of_one_writer(tmp_path, seed):
    rng = random.Random(seed)
    rows = rng.choice([0, 1, 2500, 9000, 12_345])
    columns = _columns(rng, rows)
    order = rng.choice([FIELDS, INSTRUCTION_FIRST])
    row_group_rows = rng.choice([1000, 4096, 5000, 1 << 20])
    limit = rng.choice([2**31 - 2, 40_000, 150_000])
    expected = _data_io_bytes(columns, order, row_group_rows, limit)
    cuts = sorted(rng.randrange(rows + 1) for _ in range(rng.choice([1, 2, 3])))
    first, *later = _split(columns, cuts)
    # never, always, past a few batches: for the writer and the segments apart
    for large, segment_large in [(1 << 40, 1), (1, 1 << 40), (1, 1), (30_000, 30_000)]:
        path = tmp_path / f"joined-{large}-{segment_large}.parquet"
        options = {"row_group_rows": row_group_rows, "chunk_text_limit": limit}
        with ParquetRowWriter(path, order, large_row_group=large, **options) as writer:
            for batch in _batches(rng, first):
                writer.write_batch(batch)
            segments = []
            for part in later:
                segment = ParquetSegment(path, order, large_row_group=segment_large)
                with segment:
                    for batch in _batches(rng, part):
                        segment.write_batch(batch)
                    segments.append(segment)
                    writer.append_segment(segment)
        assert path.read_bytes() == expected, (seed, large, segment_large)
        if segment_large == 1:  # every segment with rows spilled them
            assert all(bool(s.spills) == bool(s.rows) for s in segments)
    # The segments' and writers' spill files are gone with them.
    assert all(p.suffix == ".parquet" and p.name.startswith("joined-") for p in tmp_path.iterdir())


def test_segments_filled_on_other_threads_under_their_own_budgets(tmp_path):
    """Each file's rows go where the engine's units send them: the first to the writer, the
    later ones each to a segment under its unit's budget (relieved as it fills), appended in
    file order once all are read."""
    rng = random.Random(11)
    columns = _columns(rng, 14_000)
    columns["response"] = [_text(rng, "long", i) for i in range(14_000)]
    expected = _data_io_bytes(columns, FIELDS, 4096, 2**31 - 2)
    parts = _split(columns, [3000, 9000])
    path = tmp_path / "threads.parquet"
    budgets = [BufferBudget(200_000) for _ in parts]
    batches = [list(_batches(random.Random(index), part)) for index, part in enumerate(parts)]

    def fill(target, items) -> None:
        for batch in items:
            target.write_batch(batch)

    with contextlib.ExitStack() as stack:
        writer = stack.enter_context(ParquetRowWriter(path, budget=budgets[0], row_group_rows=4096))
        segments = [stack.enter_context(ParquetSegment(path, budget=b)) for b in budgets[1:]]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(fill, [writer, *segments], batches))
        assert all(segment.spills for segment in segments)
        for segment in segments:
            writer.append_segment(segment)
    assert path.read_bytes() == expected
    assert [p.name for p in tmp_path.iterdir()] == ["threads.parquet"]
    assert all(budget.used == 0 and not budget.writers for budget in budgets)


def test_large_string_columns_pass_through_a_segment(tmp_path):
    rows = 3000
    values = [f"v{i}" * (i % 5) for i in range(rows)]
    table = pa.table({name: pa.array(values, pa.string()) for name in FIELDS})
    serial, joined = tmp_path / "serial.parquet", tmp_path / "joined.parquet"
    with ParquetRowWriter(serial, row_group_rows=1000) as writer:
        writer.write_batch(table)
    with ParquetRowWriter(joined, row_group_rows=1000, large_row_group=1) as writer:
        writer.write_batch(table.slice(0, 1234))
        with ParquetSegment(joined, large_row_group=1) as segment:
            rest = table.slice(1234)
            wide = rest.column(1).cast(pa.large_string())
            segment.write_batch(rest.set_column(1, "instruction", wide))
            writer.append_segment(segment)
    assert joined.read_bytes() == serial.read_bytes()


def test_a_segment_not_handed_over_leaves_no_file(tmp_path):
    columns = _columns(random.Random(5), 3000)
    path = tmp_path / "x.parquet"
    with ParquetSegment(path, large_row_group=1) as segment:
        for batch in _batches(random.Random(5), columns):
            segment.write_batch(batch)
        assert segment.spills and list(tmp_path.iterdir())
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="continues"):
        with ParquetRowWriter(path) as writer, ParquetSegment(path, INSTRUCTION_FIRST) as other:
            writer.append_segment(other)
    assert list(tmp_path.iterdir()) == []
