"""Columnar cleaning rules: a source's transform on Arrow record batches, not on Python rows.

A source whose rules are column expressions (FLAN, SYNTH, ...) sets
``SourceSpec.columnar`` to a :class:`ColumnarRule`: the raw columns it reads and a function
``clean(batch, part) -> CleanedBatch`` built from pyarrow compute (selection, casts,
concatenation, conditions by value, filters, null handling). The engine in
:mod:`hrm_assets.cleaning.clean` reads the raw files in record batches, applies the rule,
validates the produced columns (nulls, condition tags, UTF-8) and hands each output's rows to
its writer as Arrow columns, grouped in read order. Rows the rule leaves out are never
dropped silently: a :class:`BatchSkip` names them with their reason, and the engine counts
them and keeps examples as the row path does.

Why pyarrow compute and not polars: the cleaned files are written by pyarrow (their bytes must
be pyarrow's, ``cleaned_parquet``), the raw files are read by pyarrow, and a rule here is a
few vectorised kernels per batch; polars would add two conversions per batch (see
docs/BENCHMARKS-cleaning.md for the measurement).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from hrm_assets.cleaning.sources.spec import SourceSpec

COLUMNAR_BATCH_ROWS = 16 * 1024
"""Raw rows per record batch: large enough that per-batch Python costs vanish, small enough
that a 1M-row raw row group is read in slices."""


READ_BUFFER_BYTES = 1024 * 1024


class NotColumnar(Exception):  # noqa: N818 - a signal: clean this source row by row
    """Raised by a rule when the raw data is not what its kernels expect (a non-string column
    where ``str()`` of a Python value decides the text); the engine then cleans the source
    with the row path, which gives the same rows."""


@dataclass(frozen=True)
class BatchSkip:
    """Raw records of one batch left out for ``reason``.

    ``rows``: their indices in the batch (ascending). ``detail(i)`` and ``output(i)`` say, for
    the record at index ``i``, what was wrong and which output file it would have gone to; they
    are called only for the few records kept as examples. ``whole_record``: each counts the
    rows a record gives (``SourceSpec.rows_per_record``, as a ``SkipRecord``), else one row.
    """

    reason: str
    rows: np.ndarray
    detail: Callable[[int], str]
    output: Callable[[int], str]
    whole_record: bool = True


@dataclass
class CleanedBatch:
    """The rows one raw batch gives, in order, as columns.

    - ``rows``: a table with string columns ``condition``, ``instruction``, ``response``.
    - ``records``: index in the raw batch of the record each row came from (for examples).
    - ``output``: the one output file of every row, or None when rows are routed; then
      ``route_names`` lists the outputs and ``route_codes`` gives each row's index into it.
    - ``skips``: the records left out, by reason.
    - ``checked``: the rule vouches that every field is valid UTF-8 and not null and every
      condition a known tag, so the engine's own checks of each batch are skipped (dmmath:
      its reader checked the text, its condition is one constant).
    """

    rows: pa.Table
    records: np.ndarray
    output: str | None = None
    route_names: list[str] = field(default_factory=list)
    route_codes: np.ndarray | None = None
    skips: list[BatchSkip] = field(default_factory=list)
    checked: bool = False


def read_parquet_batches(
    path: Path, columns: Sequence[str], batch_size: int | None = None
) -> Iterator[pa.RecordBatch]:
    """The record batches of a Parquet file, only ``columns`` decoded, ``batch_size`` rows at
    a time (default :data:`COLUMNAR_BATCH_ROWS`: a large row group is read in slices); a
    missing column raises ``ValueError`` naming the file."""
    import pyarrow.parquet as pq

    # buffer_size: column chunks are read through a small buffer, page by page, instead of
    # whole (a 1M-row row group's chunk is hundreds of MB): less memory, and faster here.
    parquet = pq.ParquetFile(path, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
    missing = [name for name in columns if name not in parquet.schema_arrow.names]
    if missing:
        raise ValueError(f"{path}: column(s) {missing} missing from the Parquet schema")
    batch_size = batch_size or COLUMNAR_BATCH_ROWS
    yield from parquet.iter_batches(batch_size=batch_size, columns=list(columns), use_threads=False)


def parquet_rows(path: Path) -> int:
    """Rows of a Parquet file, from its footer."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def parquet_schema(path: Path) -> pa.Schema:
    import pyarrow.parquet as pq

    return pq.read_schema(path)


RAW_BYTES_KEY = b"hrm.raw_bytes"
"""Schema metadata of a batch from a reader that cannot count a file's records up front (a
text file): the raw bytes the batch was read from, for the progress in MB/s."""


def batch_raw_bytes(batch: pa.RecordBatch) -> int:
    metadata = batch.schema.metadata or {}
    return int(metadata.get(RAW_BYTES_KEY, b"0"))


@dataclass(frozen=True)
class ColumnarRule:
    """How a source cleans on columns.

    - ``columns``: the raw columns read (the others are never decoded).
    - ``clean(batch, part)``: the :class:`CleanedBatch` of one raw record batch; may raise
      :class:`NotColumnar` (checked once per file on its schema by ``check_schema``).
    - ``check_schema(schema)``: raises :class:`NotColumnar` when a file's types are not the
      ones the kernels handle like data_io's Python does.
    - ``parts_disjoint``: no two raw parts write the same output file, so parts may be cleaned
      in parallel without changing any file.
    - ``read``, ``read_schema``: a raw file's record batches (only ``columns``) and its
      schema; Parquet by default.
    - ``count_rows``: a file's records, for the raw bytes a batch stands for; None when the
      reader says it with :data:`RAW_BYTES_KEY` instead.
    - ``part_files(spec, raw_root)``: the parts and their files, for a layout the engine does
      not list itself (a declared source's local files).
    """

    columns: tuple[str, ...]
    clean: Callable[[pa.RecordBatch, str], CleanedBatch]
    check_schema: Callable[[pa.Schema], None]
    parts_disjoint: bool = True
    read: Callable[[Path, Sequence[str]], Iterator[pa.RecordBatch]] = read_parquet_batches
    count_rows: Callable[[Path], int] | None = parquet_rows
    read_schema: Callable[[Path], pa.Schema] = parquet_schema
    part_files: Callable[[SourceSpec, Path], list[tuple[str, list[Path]]]] | None = None


# -- kernels shared by the rules ----------------------------------------------------------------


def is_text(data_type: pa.DataType) -> bool:
    """Whether a column's values are text for ``str()`` (string types, or a column of nulls)."""
    import pyarrow as pa

    return (
        pa.types.is_string(data_type)
        or pa.types.is_large_string(data_type)
        or pa.types.is_null(data_type)
        or getattr(pa.types, "is_string_view", lambda _t: False)(data_type)
    )


def require_text_columns(schema: pa.Schema, names: Sequence[str]) -> None:
    """:class:`NotColumnar` unless every column of ``names`` in ``schema`` is text."""
    for name in names:
        if name not in schema.names:
            # The row path reports a record without the key (malformed raw record).
            raise NotColumnar(f"column {name!r} missing")
        index = schema.get_field_index(name)
        if index >= 0 and not is_text(schema.field(index).type):
            raise NotColumnar(f"column {name!r} is {schema.field(index).type}, not text")


def text(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``column`` as a plain ``string`` array."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column if column.type == pa.string() else column.cast(pa.string())


def null_mask(batch: pa.RecordBatch, names: Sequence[str]) -> np.ndarray:
    """A boolean numpy mask of the rows where any of ``names`` is null."""
    import numpy as np

    from hrm_assets.cleaning.arrow_buffers import null_flags

    mask = np.zeros(batch.num_rows, dtype=bool)
    for name in names:
        column = batch.column(name)
        if column.null_count:
            mask |= null_flags(column)
    return mask


def null_names(batch: pa.RecordBatch, names: Sequence[str], row: int) -> list[str]:
    """Which of ``names`` are null at ``row``."""
    return [name for name in names if not batch.column(name)[row].is_valid]


def constant(value: str, length: int) -> pa.Array:
    """A ``string`` array of ``length`` copies of ``value``."""
    from hrm_assets.cleaning.arrow_buffers import repeated_string

    return repeated_string(value, length)


# What str.strip() removes: every character for which str.isspace() holds (pyarrow's
# utf8_trim_whitespace leaves some of them, U+00A0 among others). Written out: finding them
# over every code point took 0.13 s of each import (tests/cleaning/test_columnar_sources.py
# checks the list against this Python's str.isspace()).
PYTHON_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def strip(column: pa.Array) -> pa.Array:
    """``str.strip()`` of every string of ``column``."""
    import pyarrow.compute as pc

    return pc.utf8_trim(column, characters=PYTHON_WHITESPACE)


def rows_table(condition: pa.Array, instruction: pa.Array, response: pa.Array) -> pa.Table:
    import pyarrow as pa

    return pa.table(
        {"condition": text(condition), "instruction": text(instruction), "response": text(response)}
    )
