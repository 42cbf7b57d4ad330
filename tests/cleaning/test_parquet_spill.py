"""A cleaned Parquet row group that spills (over its budget, or past ``large_row_group``) is
written from its spill file memory-mapped (``hrm_assets.cleaning.mapped_spill``), in pieces
cut where data_io's write batches start (``piece_plan``): the bytes are those of data_io's
``pq.write_table(pa.Table.from_pydict(columns))``, whatever batches the rows came in, and
the memory the writer holds does not grow with the row group.

Rows are SYNTHETIC, generated here."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning.cleaned_parquet import ParquetRowWriter
from hrm_assets.cleaning.mapped_spill import MappedFile, pages_dropped_while
from hrm_assets.cleaning.rows import FIELDS

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTRUCTION_FIRST = ("instruction", "response", "condition")


def _text(rng: random.Random, kind: str, index: int) -> str:
    if kind == "empty":
        return ""
    if kind == "short":  # few values: the dictionary never falls back
        return rng.choice(["direct", "cot", "synth,cot", "é"])
    if kind == "long":  # distinct, long: the dictionary overflows its page, pages fill
        return f"{index} " + "".join(rng.choice("abc é中𝔸\n") for _ in range(rng.randrange(400)))
    return rng.choice(["", "x", "数学", f"v{index % 50}"])  # mixed, with empty strings


def _columns(rng: random.Random, rows: int) -> dict[str, list[str]]:
    kinds = {
        "condition": rng.choice(["short", "mixed"]),
        "instruction": rng.choice(["long", "mixed", "empty"]),
        "response": rng.choice(["long", "short", "mixed"]),
    }
    return {name: [_text(rng, kinds[name], i) for i in range(rows)] for name in FIELDS}


def _data_io_bytes(columns: dict[str, list[str]], order, row_group_rows, limit) -> bytes:
    """data_io's one-call write; Arrow chunks cut where ``pa.array`` cuts them at a text
    limit of ``limit`` bytes (2 GiB in pyarrow, lowered here as the writer's is)."""
    arrays = {}
    for name in order:
        values, pieces, chunk, used = columns[name], [], [], 0
        for value in values:
            size = len(value.encode())
            if chunk and used + size > limit:
                pieces.append(pa.array(chunk, pa.string()))
                chunk, used = [], 0
            chunk.append(value)
            used += size
        pieces.append(pa.array(chunk, pa.string()))
        arrays[name] = pa.chunked_array(pieces, pa.string())
    sink = io.BytesIO()
    pq.write_table(pa.table(arrays), sink, row_group_size=row_group_rows)
    return sink.getvalue()


def _batches(rng: random.Random, columns: dict[str, list[str]]):
    """The rows as record batches of random sizes (most cuts off 1,024-row boundaries), some
    with large_string columns, as the engine hands them over."""
    rows, start = len(columns["condition"]), 0
    while start < rows:
        count = min(rows - start, rng.choice([1, 7, 500, 1023, 1024, 3000, 5000]))
        arrays = [pa.array(columns[name][start : start + count], pa.string()) for name in FIELDS]
        if rng.random() < 0.2:
            arrays[1] = arrays[1].cast(pa.large_string())
        yield pa.record_batch(arrays, names=list(FIELDS))
        start += count


@pytest.mark.parametrize("seed", range(8))
def test_spilled_row_groups_have_data_ios_bytes(tmp_path, seed):
    rng = random.Random(seed)
    rows = rng.choice([0, 1, 900, 5000, 12_345])
    columns = _columns(rng, rows)
    order = rng.choice([FIELDS, INSTRUCTION_FIRST])
    row_group_rows = rng.choice([1000, 4096, 5000, 1 << 20])
    limit = rng.choice([2**31 - 2, 40_000, 150_000])
    expected = _data_io_bytes(columns, order, row_group_rows, limit)
    for large_row_group in (1 << 40, 1, 30_000):  # never, always, past a few batches
        path = tmp_path / f"spilled-{large_row_group}.parquet"
        options = {"row_group_rows": row_group_rows, "chunk_text_limit": limit}
        with ParquetRowWriter(path, order, large_row_group=large_row_group, **options) as writer:
            for batch in _batches(rng, columns):
                writer.write_batch(batch)
        assert path.read_bytes() == expected, (seed, large_row_group)
        if large_row_group == 1 and rows:
            assert writer.spills > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"spilled-{size}.parquet" for size in (1 << 40, 1, 30_000)
    )


def test_rows_written_one_by_one_spill_with_the_same_bytes(tmp_path):
    rng = random.Random(3)
    columns = _columns(rng, 9000)
    columns["instruction"] = [_text(rng, "long", i) for i in range(9000)]
    expected = _data_io_bytes(columns, FIELDS, 4000, 300_000)
    path = tmp_path / "rows.parquet"
    with ParquetRowWriter(
        path,
        row_group_rows=4000,
        piece_rows=1024,
        chunk_text_limit=300_000,
        large_row_group=50_000,
    ) as writer:
        for values in zip(*(columns[name] for name in FIELDS), strict=True):
            writer.write(values)
    assert writer.spills > 5
    assert path.read_bytes() == expected


def test_a_failed_spilled_write_leaves_no_file(tmp_path):
    columns = _columns(random.Random(4), 3000)
    with pytest.raises(RuntimeError, match="stop"):
        with ParquetRowWriter(tmp_path / "x.parquet", large_row_group=1) as writer:
            for batch in _batches(random.Random(4), columns):
                writer.write_batch(batch)
            assert writer.spills
            raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []


def test_mapped_pages_are_dropped_while_read(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 40_000)
    mapped = MappedFile(path)
    with pages_dropped_while([mapped], interval=0.001):
        # Read while the pages go: every byte is still the file's.
        for _ in range(20):
            assert mapped.buffer.to_pybytes() == path.read_bytes()
    mapped.close()
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    nothing = MappedFile(empty)
    assert nothing.buffer.size == 0
    nothing.drop_pages()
    nothing.close()


@pytest.mark.slow
def test_a_large_row_group_is_written_in_bounded_memory(tmp_path):
    """One row group of ~800 MB of text (200,000 rows) written through ``write_batch`` in
    batches, as the engine writes OpenMathInstruct-2's cot file: the writer's peak resident
    memory over the process's before is about what it holds before spilling (32 MiB of
    text) and a few batches, far below the row group."""
    code = textwrap.dedent(
        """
        import json, sys
        import numpy as np, pyarrow as pa, pyarrow.compute as pc
        from hrm_assets.cleaning.cleaned_parquet import ParquetRowWriter

        def status(key):
            for line in open("/proc/self/status"):
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024

        rows, batch_rows = 200_000, 4096
        rng = np.random.default_rng(1)
        words = pa.array([f"w{i}" for i in range(5000)])
        base = status("VmHWM")
        text = 0
        with ParquetRowWriter(sys.argv[1], row_group_rows=1 << 20) as writer:
            for start in range(0, rows, batch_rows):
                count = min(batch_rows, rows - start)
                lengths = rng.integers(100, 600, size=count)
                picks = words.take(pa.array(rng.integers(0, 5000, size=int(lengths.sum()))))
                offsets = pa.array(np.concatenate(([0], np.cumsum(lengths))).astype(np.int32))
                body = pc.binary_join(pa.ListArray.from_arrays(offsets, picks), " ")
                batch = pa.record_batch(
                    [pa.array(["synth,cot"] * count), body, body],
                    names=["condition", "instruction", "response"],
                )
                text += batch.nbytes
                writer.write_batch(batch)
                del batch, body, picks
        print(json.dumps({"base": base, "peak": status("VmHWM"), "text": text,
                          "spills": writer.spills, "groups": writer.row_groups}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = tmp_path / "big.parquet"
    run = subprocess.run(
        [sys.executable, "-c", code, str(out)], capture_output=True, text=True, env=env, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["groups"] == 1 and result["spills"] > 10
    assert result["text"] > 700 * 1024**2
    assert result["peak"] - result["base"] < 160 * 1024**2, result
    assert pq.ParquetFile(out).metadata.num_rows == 200_000
