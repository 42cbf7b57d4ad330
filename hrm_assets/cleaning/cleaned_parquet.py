"""Cleaned Parquet files, streamed, with the bytes of data_io's
``pq.write_table(pa.Table.from_pydict(columns), path)``.

data_io holds a whole file's columns as Python lists and writes them in one call. The bytes
follow from what pyarrow decides on the way, which a streaming writer must reproduce:

- **Row groups.** ``write_table`` cuts the table every :func:`pyarrow_row_group_rows` rows
  (pyarrow's default row group size: 1,048,576 rows since pyarrow 15).
- **Arrow chunks.** ``pa.array`` of a list of strings starts a new chunk before a value that
  would take the chunk's text over :data:`CHUNK_TEXT_LIMIT` bytes (2 GiB - 2), separately in
  each column (:func:`chunk_starts`).
- **Write batches.** The Parquet column writer takes each chunk (within a row group)
  :data:`WRITE_BATCH_ROWS` values at a time from its start and checks the page and dictionary
  size limits between batches; so the pieces we hand it may only be cut where one of data_io's
  batches starts: at a row group or chunk start, or a multiple of 1,024 rows after one
  (:func:`piece_plan`). Other cuts move page boundaries.

Everything else is pyarrow's default on both sides: snappy compression, dictionary encoding
with fallback, statistics, format version 2.6, the stored Arrow schema (nullable ``string``
fields, no pandas metadata). The footer's ``created_by`` names the pyarrow version, so the
bytes equal data_io's when both run the same pyarrow.

Memory: rows are buffered as Arrow record batches until their row group is complete. A row
group of a large source holds gigabytes, so the writers of one run share a
:class:`BufferBudget`; over it, the largest buffers are spilled to Arrow IPC files next to the
output. A spilled row group is written from its file memory-mapped, the pages pyarrow's writer
has read dropped as it goes (:mod:`hrm_assets.cleaning.mapped_spill`): pyarrow's Python API
writes a row group only as one call holding all its columns, and this keeps what the process
holds of them to a few megabytes. Row groups never depend on memory, and so neither do the
bytes.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hrm_assets.cleaning.arrow_buffers import integers
from hrm_assets.cleaning.mapped_spill import MappedFile, pages_dropped_while
from hrm_assets.cleaning.rows import FIELDS, Row
from hrm_assets.common.atomic import (
    TMP_PREFIX,
    AtomicGroup,
    atomic_file,
    create_temporary_file,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq


@functools.cache
def pyarrow_row_group_rows() -> int:
    """The row group size of ``write_table(row_group_size=None)``: 1,048,576 rows since
    pyarrow 15. Read from pyarrow (a private name, hence the fallback) on first use, so that
    importing this module does not import pyarrow."""
    import pyarrow._parquet

    return int(getattr(pyarrow._parquet, "_DEFAULT_ROW_GROUP_SIZE", 1024 * 1024))


CHUNK_TEXT_LIMIT = 2**31 - 2
WRITE_BATCH_ROWS = 1024  # parquet::WriterProperties' default write_batch_size
PIECE_ROWS = 8 * WRITE_BATCH_ROWS
DEFAULT_BUFFER_BYTES = 256 * 1024 * 1024
# A writer holding more text of one row group than this spills it, whatever its budget says:
# its row group is large, and a spilled row group is written from its file (mapped, its pages
# dropped as written) with no copy on the heap.
LARGE_ROW_GROUP_BYTES = 32 * 1024 * 1024


def chunk_starts(
    lengths: Sequence[int] | np.ndarray, carried: int, limit: int = CHUNK_TEXT_LIMIT
) -> tuple[list[int], int]:
    """Where ``pa.array`` would start new chunks in a run of string values.

    ``lengths`` are the values' UTF-8 byte lengths and ``carried`` the bytes already in the
    current chunk before them. Returns the indices (into ``lengths``) of the values that start a
    new chunk, and the bytes in the chunk open after the last value. A value alone over
    ``limit`` cannot be an Arrow string at all: ValueError.
    """
    import numpy as np

    total = np.cumsum(np.asarray(lengths, dtype=np.int64))
    starts: list[int] = []
    # The open chunk: its bytes before this run, the cumulative total before its first value
    # here, and that value's index (-1: the chunk began before this run).
    used, before, first = carried, 0, 0 if carried == 0 else -1
    while True:
        index = int(np.searchsorted(total, limit - used + before, side="right"))
        if index >= len(total):
            return starts, used + (int(total[-1]) - before if len(total) else 0)
        if index == first:
            raise ValueError(f"a string of {int(lengths[index])} bytes is over Arrow's {limit}")
        starts.append(index)
        used, before, first = 0, int(total[index - 1]) if index else 0, index


def piece_plan(
    rows: int, starts: Sequence[int], array_ends: Sequence[int]
) -> list[tuple[int, int, bool]]:
    """The pieces ``[(start, stop, copied)]`` that one column of a row group of ``rows`` rows
    is handed to pyarrow's writer in, so that it cuts write batches where data_io's does.

    Every cut is at a chunk start (``starts``, from :func:`chunk_starts`) or a multiple of
    :data:`WRITE_BATCH_ROWS` rows after the row group's start or the last chunk start. The
    column is buffered as arrays ending at ``array_ends`` (cumulative): a piece inside one of
    them is a zero-copy slice (``copied`` False); where an array ends off such a cut, the
    piece up to the next cut (at most ``WRITE_BATCH_ROWS`` rows) spans arrays and must be
    copied (``copied`` True).
    """
    import bisect

    plan: list[tuple[int, int, bool]] = []
    cuts = [0, *(start for start in starts if 0 < start < rows), rows]
    for begin, end in zip(cuts, cuts[1:], strict=False):
        position = begin
        while position < end:
            array = bisect.bisect_right(array_ends, position)
            if array >= len(array_ends):
                raise ValueError(f"arrays ending at {array_ends[-1:]} hold no row {position}")
            array_end = min(array_ends[array], end)
            # The last cut inside this array (or the segment's end, if the array reaches it).
            whole_batches = (array_end - begin) // WRITE_BATCH_ROWS * WRITE_BATCH_ROWS
            stop = end if array_end == end else begin + whole_batches
            if stop > position:
                plan.append((position, stop, False))
            else:
                stop = min(end, position + WRITE_BATCH_ROWS)
                plan.append((position, stop, True))
            position = stop
    return plan


def _single(column: pa.ChunkedArray, start: int, stop: int) -> pa.Array:
    """Rows ``start:stop`` of ``column``, within one of its arrays (a zero-copy slice)."""
    chunks = [chunk for chunk in column.slice(start, stop - start).chunks if len(chunk)]
    if len(chunks) != 1:
        raise ValueError(f"rows {start}:{stop} span {len(chunks)} arrays")
    return chunks[0]


def _joined(column: pa.ChunkedArray, start: int, stop: int) -> pa.Array:
    """Rows ``start:stop`` of ``column`` as one array (a copy when they span arrays)."""
    import pyarrow as pa

    chunks = [chunk for chunk in column.slice(start, stop - start).chunks if len(chunk)]
    return chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)


def fits_one_write(rows: int, text_bytes: int, row_group_rows: int | None = None) -> bool:
    """Whether rows with ``text_bytes`` of text (the three fields' UTF-8 bytes) make one row
    group of single-chunk columns in data_io's write: then writing them as one table whose
    columns are single chunks gives its bytes, with none of :class:`ParquetRowWriter`'s
    piece cutting (a column holds at most all the text, so none starts a second chunk)."""
    if row_group_rows is None:
        row_group_rows = pyarrow_row_group_rows()
    return 0 < rows <= row_group_rows and text_bytes <= CHUNK_TEXT_LIMIT


WRITE_BUFFER_BYTES = 1024 * 1024
"""The native buffer a file of one row group is written through (:func:`write_one_row_group`)."""


def write_one_row_group(handle, table: pa.Table, schema: pa.Schema) -> None:
    """Write ``table`` (string columns named as ``schema``'s, each one chunk; see
    :func:`fits_one_write`) to the open binary ``handle`` as data_io's ``write_table`` would."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = []
    for name in schema.names:
        column = table.column(name)
        if column.num_chunks != 1:
            raise ValueError(f"column {name!r} has {column.num_chunks} chunks, not one")
        chunk = column.chunk(0)
        columns.append(chunk if chunk.type == pa.string() else chunk.cast(pa.string()))
    whole = pa.Table.from_arrays(columns, schema=schema)
    del columns
    # Through a native buffer: pyarrow writing to a Python file object calls its write() for
    # every page and header, under the GIL (about a millisecond per small file); here once a
    # buffer is full, and at the end. The file is never held whole: encoded into a growing
    # BufferOutputStream first, a large file added its encoded size to its rows' (tasksource's
    # peak), and every file's encoding took fresh memory that the kernel zeroed (0.3 s more
    # CPU for FLAN's 990 files).
    stream = pa.BufferedOutputStream(pa.PythonFile(handle, mode="w"), WRITE_BUFFER_BYTES)
    with pq.ParquetWriter(stream, schema) as writer:
        writer.write_table(whole)
    stream.detach()  # flushed; the handle stays open for its owner to close


def _writer_batches(
    batch: pa.RecordBatch | pa.Table, columns: Sequence[str], schema: pa.Schema
) -> list[pa.RecordBatch]:
    """``batch``'s rows as record batches of ``schema``: its ``columns`` in that order, a
    large string cast to string, a table's chunks combined first."""
    import pyarrow as pa

    batches = batch.combine_chunks().to_batches() if isinstance(batch, pa.Table) else [batch]
    string = pa.string()
    return [
        pa.record_batch(
            [
                column if column.type == string else column.cast(string)
                for column in (whole.column(name) for name in columns)
            ],
            schema=schema,
        )
        for whole in batches
    ]


def _discard_spill(stream, handle, path: Path | None) -> None:
    """Close a spill file's IPC stream and file (either may be gone) and remove the file."""
    for opened in (stream, handle):
        if opened is not None:
            with contextlib.suppress(OSError, ValueError):
                opened.close()
    if path is not None:
        path.unlink(missing_ok=True)


def new_spill_path(output: Path) -> Path:
    """A new, empty spill file beside ``output``, named as one of its temporaries (the next
    run of the source removes it if this one dies). Open it to append, never "w": ext4 writes
    a file truncated by its open to disk when it is closed (``auto_da_alloc``), 0.23-0.26 s
    of the closing thread for 640 MB, for a file removed seconds later."""
    output.parent.mkdir(parents=True, exist_ok=True)
    return create_temporary_file(output.parent, f"{TMP_PREFIX}{output.name}.")


def open_spill_file(output: Path) -> tuple[Path, pa.OSFile]:
    """``(path, file)``: :func:`new_spill_path` opened to append as a native file (a Python
    one would copy every buffer into a bytes object)."""
    import pyarrow as pa

    path = new_spill_path(output)
    return path, pa.OSFile(str(path), mode="a")


def _open_spill(output: Path, schema: pa.Schema):
    """``(path, file, stream)``: :func:`open_spill_file` and an Arrow IPC stream of
    ``schema`` writing to it."""
    import pyarrow as pa

    path, handle = open_spill_file(output)
    return path, handle, pa.ipc.new_stream(handle, schema)


class BufferBudget:
    """Text buffered by all the Parquet writers of one run, in characters (about bytes).

    When a write takes ``used`` over ``limit``, the writers with the largest buffers spill them
    to disk until at most half the limit is left in use.
    """

    def __init__(self, limit: int = DEFAULT_BUFFER_BYTES):
        if limit < 1:
            raise ValueError("the buffer budget must be at least 1")
        self.limit = limit
        self.used = 0
        self.writers: dict[int, ParquetRowWriter] = {}  # by id(): thousands join and leave

    def relieve(self) -> None:
        for writer in sorted(self.writers.values(), key=lambda w: w.buffered, reverse=True):
            if self.used <= self.limit // 2:
                break
            writer.spill()


class ParquetRowWriter:
    """Streams rows to ``path`` as Parquet with string ``columns`` in that order (a permutation
    of the row fields), byte-identical to data_io's one-call write of the same rows. The file
    appears only when the writer exits cleanly.

    ``row_group_rows`` (default: pyarrow's), ``piece_rows`` and ``chunk_text_limit`` are
    pyarrow's figures; tests lower them to exercise several row groups and chunks on small
    data. ``group``: the file is committed with the others of that :class:`AtomicGroup`
    instead of on its own. ``large_row_group``: text of one row group held in memory past
    which the writer spills it (and the rest of it as it comes) even within its budget.
    """

    def __init__(
        self,
        path: Path,
        columns: Sequence[str] = FIELDS,
        budget: BufferBudget | None = None,
        row_group_rows: int | None = None,
        piece_rows: int = PIECE_ROWS,
        chunk_text_limit: int = CHUNK_TEXT_LIMIT,
        group: AtomicGroup | None = None,
        large_row_group: int = LARGE_ROW_GROUP_BYTES,
    ):
        if sorted(columns) != sorted(FIELDS):
            raise ValueError(f"columns {list(columns)} must be {list(FIELDS)} in some order")
        if row_group_rows is None:
            row_group_rows = pyarrow_row_group_rows()
        if row_group_rows < 1:
            raise ValueError("row_group_rows must be at least 1")
        if piece_rows < 1 or piece_rows % WRITE_BATCH_ROWS:
            raise ValueError(f"piece_rows must be a multiple of {WRITE_BATCH_ROWS}")
        self.path = Path(path)
        self.columns = tuple(columns)
        self.rows = 0
        self.row_groups = 0
        self.spills = 0
        self.buffered = 0  # characters of text held in memory
        self._order = [FIELDS.index(name) for name in self.columns]
        self._row_group_rows = row_group_rows
        self._piece_rows = piece_rows
        self._chunk_text_limit = chunk_text_limit
        self._large_row_group = large_row_group
        self._budget = budget
        self._group = group
        self._pending: list[list[str]] = [[] for _ in self.columns]
        # The row group's rows in order, as (where, batch): "memory" (counted in buffered),
        # "spilled" (batch None: the next one of the spill stream) or "mapped" (read from an
        # appended segment's spill file, which stays mapped until its rows are written).
        self._batches: list[tuple[str, pa.RecordBatch | None]] = []
        self._group_rows = 0
        self._chunk_bytes = [0] * len(self.columns)  # text in each column's open Arrow chunk
        # The spill file of the row group being buffered: one IPC stream, open while rows
        # are added; once closed, its size in _spilled_bytes (0: nothing spilled).
        self._spill_path: Path | None = None
        self._spill_file: pa.NativeFile | None = None
        self._spill_stream: pa.ipc.RecordBatchStreamWriter | None = None
        self._spilled_bytes = 0
        self._stack = contextlib.ExitStack()
        self._mapped: list[MappedFile] = []  # while a row group is written
        self._segment_files: list[tuple[MappedFile, Path]] = []  # appended, not all written
        self._appending: MappedFile | None = None
        self._writer: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None

    def __enter__(self) -> ParquetRowWriter:
        import pyarrow as pa

        self._schema = pa.schema([(name, pa.string()) for name in self.columns])
        self._stack.callback(self._remove_spill_file)
        self._stack.callback(self._release_segment_files, everything=True)
        if self._budget is not None:
            self._budget.writers[id(self)] = self
        return self

    def _parquet_writer(self) -> pq.ParquetWriter:
        """The Parquet writer of the temporary file, opened on the first row group written:
        a run with thousands of outputs (FLAN's tasks) holds their rows in the shared budget,
        not thousands of open files and column writers, and writes most of them one after
        the other when they close."""
        if self._writer is None:
            import pyarrow.parquet as pq

            if self._group is None:
                handle = self._stack.enter_context(atomic_file(self.path, "wb"))
            else:  # renamed into place with the run's other outputs
                handle = self._group.open(self.path)
                self._stack.push(self._group.closer(handle))
            self._writer = pq.ParquetWriter(handle, self._schema)
            # Last in, first out: the footer is written before atomic_file renames (or the
            # file is closed before its removal).
            self._stack.callback(self._writer.close)
        return self._writer

    def write(self, row: Row) -> None:
        for column, field in zip(self._pending, self._order, strict=True):
            column.append(row[field])
        self.rows += 1
        self._group_rows += 1
        size = len(row[0]) + len(row[1]) + len(row[2])
        self.buffered += size
        if self._budget is not None:
            self._budget.used += size
        if self._group_rows >= self._row_group_rows:
            self.write_row_group()
        elif self._group_rows % self._piece_rows == 0:
            self._seal()
            # A row group that spilled goes on spilling; a large one starts.
            if self._spill_stream is not None or self.buffered > self._large_row_group:
                self.spill()
        if self._budget is not None and self._budget.used > self._budget.limit:
            self._budget.relieve()

    def write_batch(self, batch: pa.RecordBatch | pa.Table, text_bytes: int | None = None) -> None:
        """Append rows given as Arrow columns named after the row fields (any order, string
        or large string), in row order; the bytes are those of writing the rows one by one.
        ``text_bytes``: the rows' text size when the caller knows it (for the budget)."""
        import pyarrow.compute as pc

        batches = _writer_batches(batch, self.columns, self._schema)
        for whole in batches:
            offset = 0
            while offset < whole.num_rows:
                take = min(whole.num_rows - offset, self._row_group_rows - self._group_rows)
                piece = whole.slice(offset, take)
                self._seal()  # rows written one by one before this batch come first
                self._batches.append(("memory", piece))
                if text_bytes is not None and take == whole.num_rows:
                    size = text_bytes
                else:
                    size = sum(pc.sum(pc.binary_length(c)).as_py() or 0 for c in piece.columns)
                self.rows += take
                self._group_rows += take
                self.buffered += size
                if self._budget is not None:
                    self._budget.used += size
                offset += take
                if self._group_rows >= self._row_group_rows:
                    self.write_row_group()
                elif self._spill_stream is not None or self.buffered > self._large_row_group:
                    # Read back from the file anyway: no use holding rows meanwhile.
                    self.spill()
                if self._budget is not None and self._budget.used > self._budget.limit:
                    self._budget.relieve()

    def _seal(self) -> None:
        """Turn the pending rows into one Arrow record batch (sealed every ``piece_rows``
        rows, a multiple of :data:`WRITE_BATCH_ROWS`, so that :func:`piece_plan` cuts them
        without copies, except where a spill cut one)."""
        if not self._pending[0]:
            return
        import pyarrow as pa

        arrays = [pa.array(values, type=pa.string()) for values in self._pending]
        self._batches.append(("memory", pa.record_batch(arrays, schema=self._schema)))
        self._pending = [[] for _ in self.columns]

    def spill(self) -> None:
        """Move every buffered row of this writer to its spill file next to the output; the
        rest of the row group then follows each batch there (it is read back from the file
        when written, whatever stays in memory)."""
        self._seal()
        if not any(where == "memory" for where, _ in self._batches):
            return
        if self._spill_stream is None:
            self._spill_path, self._spill_file, self._spill_stream = _open_spill(
                self.path, self._schema
            )
        for index, (where, batch) in enumerate(self._batches):
            if where == "memory":
                self._spill_stream.write_batch(batch)
                self._batches[index] = ("spilled", None)
        self.spills += 1
        self._release_buffered()

    def append_segment(self, segment: ParquetSegment) -> None:
        """Continue this writer's rows with ``segment``'s, in their order: the row groups,
        pages and bytes are those of writing them here one by one. The segment's spilled rows
        are read zero-copy from its spill file, which this writer takes over and keeps mapped
        (never spilling them again) until the row groups holding them are written; its rows
        in memory are written as :meth:`write_batch` writes them."""
        import pyarrow as pa

        if segment.columns != self.columns:
            raise ValueError(f"a segment of columns {segment.columns} continues {self.columns}")
        spill, memory = segment.hand_over()
        if spill is not None:
            mapped = MappedFile(spill)
            self._segment_files.append((mapped, spill))
            self._appending = mapped
            try:
                for batch in pa.ipc.open_stream(mapped.buffer):
                    self._add_mapped(batch)
            finally:
                self._appending = None
            if not any(where == "mapped" for where, _ in self._batches):
                self._release_segment_files()
        for batch, text in memory:
            self.write_batch(batch, text)

    def _add_mapped(self, batch: pa.RecordBatch) -> None:
        """Append rows read from a segment's mapped spill file, cut at row group ends."""
        self._seal()
        offset = 0
        while offset < batch.num_rows:
            take = min(batch.num_rows - offset, self._row_group_rows - self._group_rows)
            self._batches.append(("mapped", batch.slice(offset, take)))
            self.rows += take
            self._group_rows += take
            offset += take
            if self._group_rows >= self._row_group_rows:
                self.write_row_group()

    def _release_segment_files(self, everything: bool = False) -> None:
        """Unmap and remove the appended segments' spill files whose rows are all written
        (all of them with ``everything``: the writer is closing)."""
        keep = []
        for mapped, path in self._segment_files:
            if mapped is self._appending and not everything:
                keep.append((mapped, path))
                continue
            mapped.close()
            path.unlink(missing_ok=True)
        self._segment_files = keep

    def _close_spill_stream(self) -> None:
        """End the row group's spill stream (its bytes start the spill file)."""
        if self._spill_stream is None:
            return
        stream, self._spill_stream = self._spill_stream, None
        stream.close()
        size = self._spill_file.tell()
        self._spill_file.close()
        self._spill_file = None
        self._spilled_bytes = size

    def _release_buffered(self) -> None:
        if self._budget is not None:
            self._budget.used -= self.buffered
        self.buffered = 0

    def _buffered_table(self, mapped: MappedFile | None) -> pa.Table:
        """The row group's buffered rows in order: the spilled ones read zero-copy from
        ``mapped`` (the spill file), the others as held."""
        import pyarrow as pa

        spilled = iter(())
        if mapped is not None:
            spilled = iter(pa.ipc.open_stream(mapped.buffer.slice(0, self._spilled_bytes)))
        batches = [next(spilled) if batch is None else batch for _, batch in self._batches]
        return pa.Table.from_batches(batches, schema=self._schema)

    def write_row_group(self) -> None:
        """Write the buffered rows as one row group, in pieces cut as data_io's write cuts
        its batches (:func:`piece_plan`).

        A row group that was spilled is written from its spill file, memory-mapped, with the
        pages the writer has passed dropped as it goes (:func:`pages_dropped_while`), and the
        pieces that must be copied (joining two spilled batches) appended to the same file
        first: the heap then holds about one piece, whatever the size of the row group."""
        self._seal()
        if self._group_rows == 0:
            return
        import pyarrow as pa
        import pyarrow.compute as pc

        if self._spill_stream is not None:
            self.spill()  # the rest too: the row group is read from the file alone
            self._close_spill_stream()
        with contextlib.ExitStack() as stack:
            mapped = self._mapped_spill(stack)
            if self._mapped:
                # A large row group follows a long read: what the allocator kept of it goes
                # back to the system before the pieces are planned (OpenMathInstruct-2's two
                # files start together as the read ends, about 400 MiB held then).
                pa.default_memory_pool().release_unused()
            table = self._buffered_table(mapped)
            plans = []
            for index, column in enumerate(table.columns):
                lengths = integers(pc.binary_length(column))
                starts, self._chunk_bytes[index] = chunk_starts(
                    lengths, self._chunk_bytes[index], self._chunk_text_limit
                )
                ends = [int(end) for end in itertools.accumulate(map(len, column.chunks))]
                plans.append(piece_plan(table.num_rows, starts, ends))
            if not self._mapped:
                joined = [
                    [_joined(column, a, b) for a, b, copied in plan if copied]
                    for column, plan in zip(table.columns, plans, strict=True)
                ]
            else:
                joined = self._spilled_joints(stack, table, plans)
            columns = []
            for column, plan, copies in zip(table.columns, plans, joined, strict=True):
                copies = iter(copies)
                pieces = [
                    next(copies) if copied else _single(column, a, b) for a, b, copied in plan
                ]
                columns.append(pa.chunked_array(pieces, type=pa.string()))
            del table, joined
            rows = pa.Table.from_arrays(columns, schema=self._schema)
            del columns
            if self._mapped:
                # Again before the write.
                pa.default_memory_pool().release_unused()
            with pages_dropped_while(self._mapped):
                self._parquet_writer().write_table(rows)
            del rows
        self.row_groups += 1
        self._group_rows = 0
        self._batches = []
        self._remove_spill_file()
        self._release_buffered()
        self._release_segment_files()

    def _mapped_spill(self, stack: contextlib.ExitStack) -> MappedFile | None:
        """The spill file mapped for this row group (None: nothing spilled); unmapped when
        ``stack`` closes. The appended segments' files this row group reads are listed in
        :attr:`_mapped` too (their pages dropped while written), but stay mapped."""
        self._mapped = []
        stack.callback(self._unmap)
        if any(where == "mapped" for where, _ in self._batches):
            self._mapped.extend(mapped for mapped, _ in self._segment_files)
        if not self._spilled_bytes:
            return None
        mapped = MappedFile(self._spill_path)
        self._mapped.append(mapped)
        return mapped

    def _unmap(self) -> None:
        mapped, self._mapped = self._mapped, []
        segments = [item for item, _ in self._segment_files]
        for item in mapped:
            if not any(item is segment for segment in segments):
                item.close()

    def _spilled_joints(
        self, stack: contextlib.ExitStack, table: pa.Table, plans: list
    ) -> list[list[pa.Array]]:
        """The copied pieces of each column, written one at a time to the end of the spill
        file (a stream of one-column batches per column; a new one when the row group's
        spilled rows are all an appended segment's) and read back mapped."""
        import pyarrow as pa

        if self._spill_path is None:
            self._spill_path = new_spill_path(self.path)
        segments = []
        schema = pa.schema([("piece", pa.string())])
        with pa.OSFile(str(self._spill_path), mode="a") as handle:
            for column, plan in zip(table.columns, plans, strict=True):
                offset = handle.tell()
                with pa.ipc.new_stream(handle, schema) as stream:
                    for a, b, copied in plan:
                        if copied:
                            joint = _joined(column, a, b)
                            stream.write_batch(pa.record_batch([joint], schema=schema))
                segments.append((offset, handle.tell() - offset))
                # The copies read the mapped rows around each joint: let their pages go
                # now, not when the write starts (with two row groups planned at once, as
                # OpenMathInstruct-2's, they added up to 190 MB).
                for mapped in self._mapped:
                    mapped.drop_pages()
        joints = MappedFile(self._spill_path)
        self._mapped.append(joints)
        return [
            [batch.column(0) for batch in pa.ipc.open_stream(joints.buffer.slice(offset, size))]
            for offset, size in segments
        ]

    def _remove_spill_file(self) -> None:
        _discard_spill(self._spill_stream, self._spill_file, self._spill_path)
        self._spill_stream = self._spill_file = self._spill_path = None
        self._spilled_bytes = 0

    def _finish(self) -> None:
        import pyarrow as pa

        if self.rows == 0:  # data_io's write_table of an empty table: one empty row group
            # (from_batches, not Schema.empty_table(), which imports pandas; same bytes)
            self._parquet_writer().write_table(pa.Table.from_batches([], schema=self._schema))
        else:
            self.write_row_group()

    def _detach(self) -> None:
        if self._budget is not None and id(self) in self._budget.writers:
            del self._budget.writers[id(self)]
            self._release_buffered()

    def __exit__(self, *exc_info) -> bool:
        if exc_info[0] is None:
            try:
                self._finish()
            except BaseException as error:
                self._detach()
                self._stack.__exit__(type(error), error, error.__traceback__)
                raise
        self._detach()
        return self._stack.__exit__(*exc_info)


class ParquetSegment:
    """Rows that continue a :class:`ParquetRowWriter`'s rows, gathered apart from it (a
    later file of a part, read on another thread while the writer takes the earlier file's
    rows) and handed to it by :meth:`ParquetRowWriter.append_segment`.

    It only buffers: rows stay in memory as Arrow record batches until ``budget`` relieves
    it or it holds more than ``large_row_group`` bytes of text, then they go to a spill file
    named as a temporary of ``path`` (the output), one Arrow IPC stream, and every row after
    them too. The writer that takes the segment over reads that file mapped, so a row is
    spilled at most once. Closing a segment that was not handed over removes its file.
    """

    def __init__(
        self,
        path: Path,
        columns: Sequence[str] = FIELDS,
        budget: BufferBudget | None = None,
        large_row_group: int = LARGE_ROW_GROUP_BYTES,
    ):
        if sorted(columns) != sorted(FIELDS):
            raise ValueError(f"columns {list(columns)} must be {list(FIELDS)} in some order")
        self.path = Path(path)
        self.columns = tuple(columns)
        self.rows = 0
        self.spills = 0
        self.buffered = 0  # characters of text held in memory
        self._budget = budget
        self._large_row_group = large_row_group
        self._memory: list[tuple[pa.RecordBatch, int]] = []  # (rows, their text bytes)
        self._spill_path: Path | None = None
        self._spill_file: pa.NativeFile | None = None
        self._spill_stream: pa.ipc.RecordBatchStreamWriter | None = None
        self._schema: pa.Schema | None = None

    def __enter__(self) -> ParquetSegment:
        import pyarrow as pa

        self._schema = pa.schema([(name, pa.string()) for name in self.columns])
        if self._budget is not None:
            self._budget.writers[id(self)] = self
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def write_batch(self, batch: pa.RecordBatch | pa.Table, text_bytes: int | None = None) -> None:
        """Append rows given as Arrow columns named after the row fields (any order, string
        or large string), as :meth:`ParquetRowWriter.write_batch` takes them."""
        import pyarrow.compute as pc

        batches = _writer_batches(batch, self.columns, self._schema)
        for whole in batches:
            if text_bytes is not None and len(batches) == 1:
                size = text_bytes
            else:
                size = sum(pc.sum(pc.binary_length(c)).as_py() or 0 for c in whole.columns)
            self._memory.append((whole, size))
            self.rows += whole.num_rows
            self.buffered += size
            if self._budget is not None:
                self._budget.used += size
            if self._spill_stream is not None or self.buffered > self._large_row_group:
                self.spill()
            if self._budget is not None and self._budget.used > self._budget.limit:
                self._budget.relieve()

    def spill(self) -> None:
        """Move the rows held in memory to the end of the spill file."""
        if not self._memory:
            return
        if self._spill_stream is None:
            self._spill_path, self._spill_file, self._spill_stream = _open_spill(
                self.path, self._schema
            )
        for batch, _ in self._memory:
            self._spill_stream.write_batch(batch)
        self._memory = []
        self.spills += 1
        self._release_buffered()

    def hand_over(self) -> tuple[Path | None, list[tuple[pa.RecordBatch, int]]]:
        """The spill file, complete (None: nothing spilled), which the caller now owns, then
        the rows still in memory with their text bytes; the segment is left empty."""
        if self._spill_stream is not None:
            self._spill_stream.close()
            self._spill_file.close()
            self._spill_stream = self._spill_file = None
        spill, self._spill_path = self._spill_path, None
        memory, self._memory = self._memory, []
        self._release_buffered()
        return spill, memory

    def close(self) -> None:
        """Drop the rows not handed over (their spill file removed); leave the budget."""
        self._memory = []
        self._release_buffered()
        if self._budget is not None:
            self._budget.writers.pop(id(self), None)
        _discard_spill(self._spill_stream, self._spill_file, self._spill_path)
        self._spill_stream = self._spill_file = self._spill_path = None

    def _release_buffered(self) -> None:
        if self._budget is not None:
            self._budget.used -= self.buffered
        self.buffered = 0
