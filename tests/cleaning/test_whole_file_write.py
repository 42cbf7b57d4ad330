"""A cleaned Parquet file written whole (``CleanedOutputs.write_whole``, most of FLAN's task
files) has the bytes of data_io's ``pq.write_table(pa.Table.from_pydict(columns), path)``,
whatever the chunks it was gathered from and however its native write buffer cuts it; files
past one row group or one Arrow chunk keep the streaming writer.

Rows are SYNTHETIC, generated here."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning import cleaned_parquet
from hrm_assets.cleaning.cleaned_parquet import (
    CHUNK_TEXT_LIMIT,
    fits_one_write,
    pyarrow_row_group_rows,
)
from hrm_assets.cleaning.outputs import CleanedOutputs

INSTRUCTION_FIRST = ("instruction", "response", "condition")


def _rows(count: int) -> dict[str, list[str]]:
    rng = random.Random(5)
    return {
        "condition": [rng.choice(["direct", "cot"]) for _ in range(count)],
        "instruction": [f"q{i} é " + "w " * rng.randrange(200) for i in range(count)],
        "response": [f"a{i}" * rng.randrange(1, 40) for i in range(count)],
    }


# A buffer larger than the file: one write at the end; a small one: a write every 4 KiB.
@pytest.mark.parametrize("buffer_bytes", [1 << 30, 4096])
def test_a_file_written_whole_has_data_ios_bytes(tmp_path, monkeypatch, buffer_bytes):
    monkeypatch.setattr(cleaned_parquet, "WRITE_BUFFER_BYTES", buffer_bytes)
    rows = _rows(5000)
    data_io = tmp_path / "data_io.parquet"
    pq.write_table(pa.Table.from_pydict({k: rows[k] for k in INSTRUCTION_FIRST}), data_io)
    # Gathered from slices of several batches, as the engine's stored groups are.
    table = pa.table(rows)
    pieces = [table.slice(0, 1), table.slice(1, 2046), table.slice(2047, 2953)]
    gathered = pa.concat_tables(pieces).combine_chunks()
    with CleanedOutputs(tmp_path / "out", "parquet", INSTRUCTION_FIRST) as outputs:
        outputs.write_whole("task.parquet", gathered)
        assert outputs.has_file("task.parquet")
        assert not (tmp_path / "out" / "task.parquet").exists()  # committed with the run
    assert (tmp_path / "out" / "task.parquet").read_bytes() == data_io.read_bytes()


def test_files_past_one_row_group_or_one_chunk_are_streamed():
    groups = pyarrow_row_group_rows()
    assert fits_one_write(groups, 100)
    assert not fits_one_write(groups + 1, 100)
    assert not fits_one_write(10, CHUNK_TEXT_LIMIT + 1)
    assert not fits_one_write(0, 0)  # an empty file is the streaming writer's case


def test_a_failed_run_leaves_no_file_written_whole(tmp_path):
    table = pa.table(_rows(10))
    try:
        with CleanedOutputs(tmp_path / "out", "parquet", INSTRUCTION_FIRST) as outputs:
            outputs.write_whole("task.parquet", table)
            raise RuntimeError("the run fails later")
    except RuntimeError:
        pass
    assert not list((tmp_path / "out").rglob("*"))
