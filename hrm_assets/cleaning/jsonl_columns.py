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

from hrm_assets.cleaning.arrow_buffers import text_column_buffers

if TYPE_CHECKING:
    import pyarrow as pa

    from hrm_assets._core import JsonLines


def jsonl_lines(rows: pa.Table | pa.RecordBatch, columns: Sequence[str]) -> bytes:
    """The JSON lines of ``rows``, one a row, keys in ``columns`` order, each line exactly
    ``orjson.dumps({name: value for name in columns}) + b"\\n"`` (a null value: ``null``).

    ``columns`` must be string columns of ``rows``; a value that is not UTF-8 raises
    ValueError naming the column and the row (counted from 1 in ``rows``)."""
    from hrm_assets._core import json_lines
    from hrm_assets.cleaning.arrow_buffers import text_column_buffers

    return json_lines(list(columns), *text_column_buffers(rows, columns))


def encode_jsonl_lines(
    lines: JsonLines, rows: pa.Table | pa.RecordBatch, columns: Sequence[str]
) -> JsonLines:
    """``lines`` (a ``hrm_assets._core.JsonLines``) holding :func:`jsonl_lines` of ``rows``
    instead of what it held, its buffer kept: ``file.write(lines)`` writes them without a
    copy. Errors as :func:`jsonl_lines`'s."""
    lines.encode(list(columns), *text_column_buffers(rows, columns))
    return lines
