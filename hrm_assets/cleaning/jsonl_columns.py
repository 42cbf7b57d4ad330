"""Cleaned rows given as Arrow columns -> data_io's JSON lines, built in the Rust core.

data_io writes each row as ``orjson.dumps(row) + b"\\n"``; encoding a million rows one Python
dict at a time cost most of a JSONL source's cleaning time (GSM8K: about 8 of 12 s). The core's
``json_lines`` writes the same bytes from the columns' buffers, without the GIL
(``rust_tokenizer/src/jsonl.rs``; pinned against orjson in
``tests/cleaning/test_jsonl_columns.py``). A run's writers encode into ``JsonLines`` buffers
kept from batch to batch (:func:`encode_jsonl_lines`, ``outputs.LineBuffers``) and written from
where they are, where a new ``bytes`` a batch cost a copy and fresh memory the kernel zeroes
(GSM8K: 0.65-0.77 -> 0.17-0.20 s of CPU for its 1M lines, docs/BENCHMARKS-cleaning.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

    from hrm_assets._core import JsonLines


def jsonl_lines(rows: pa.Table | pa.RecordBatch, columns: Sequence[str]) -> bytes:
    """The JSON lines of ``rows``, one a row, keys in ``columns`` order, each line exactly
    ``orjson.dumps({name: value for name in columns}) + b"\\n"`` (a null value: ``null``).

    ``columns`` must be string columns of ``rows``; a value that is not UTF-8 raises
    ValueError naming the column and the row (counted from 1 in ``rows``)."""
    from hrm_assets._core import json_lines

    return json_lines(list(columns), *_column_buffers(rows, columns))


def encode_jsonl_lines(
    lines: JsonLines, rows: pa.Table | pa.RecordBatch, columns: Sequence[str]
) -> JsonLines:
    """``lines`` (a ``hrm_assets._core.JsonLines``) holding :func:`jsonl_lines` of ``rows``
    instead of what it held, its buffer kept: ``file.write(lines)`` writes them without a
    copy. Errors as :func:`jsonl_lines`'s."""
    lines.encode(list(columns), *_column_buffers(rows, columns))
    return lines


def _column_buffers(rows: pa.Table | pa.RecordBatch, columns: Sequence[str]) -> tuple:
    """``(offsets, data, valid)`` of the string columns ``columns`` of ``rows``, as the
    core's ``json_lines`` takes them: int64 offsets, the data, a uint8 flag a row or None."""
    import numpy as np
    import pyarrow as pa

    offsets, data, valid = [], [], []
    for name in columns:
        column = rows.column(name)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if pa.types.is_string(column.type):
            width = np.int32
        elif pa.types.is_large_string(column.type):
            width = np.int64
        else:
            raise ValueError(f"column {name!r} is {column.type}, not text")
        _, offset_buffer, data_buffer = column.buffers()
        start = column.offset
        if offset_buffer is None:  # an empty array may have no buffers
            offsets.append(np.zeros(1, dtype=np.int64))
        else:
            widened = np.frombuffer(offset_buffer, dtype=width)[start : start + len(column) + 1]
            offsets.append(widened.astype(np.int64))
        data.append(
            np.zeros(0, np.uint8) if data_buffer is None else np.frombuffer(data_buffer, np.uint8)
        )
        if column.null_count:
            valid.append(column.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8))
        else:
            valid.append(None)
    return offsets, data, valid
