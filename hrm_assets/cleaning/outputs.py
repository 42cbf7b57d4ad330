"""The writers of a cleaning run: data_io's JSONL lines, the Parquet writer of
``cleaned_parquet``, and :class:`CleanedOutputs`, which opens them on first use and commits
them all or none."""

from __future__ import annotations

import contextlib
import errno
import json
import resource
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hrm_assets.cleaning.cleaned_parquet import (
    BufferBudget,
    ParquetRowWriter,
    write_one_row_group,
)
from hrm_assets.cleaning.jsonl_columns import encode_jsonl_lines
from hrm_assets.cleaning.rows import FIELDS, Row
from hrm_assets.common.atomic import AtomicGroup, atomic_file

if TYPE_CHECKING:
    import pyarrow as pa

_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def jsonl_line(row: Row, columns: Sequence[str] = FIELDS) -> bytes:
    """One JSONL line exactly as data_io writes it (``orjson.dumps(row) + b"\\n"``), keys in
    ``columns`` order (the order of the source's data_io dict).

    The stdlib encoder with compact separators and no ASCII escaping is byte-identical to
    orjson for every valid string; text that is not valid UTF-8 is rejected before this.
    """
    return (_JSON.encode({name: row[FIELDS.index(name)] for name in columns}) + "\n").encode()


# -- writers -----------------------------------------------------------------------------------


class LineBuffers:
    """The buffers JSONL writers encode a batch's lines into (the core's ``JsonLines``), each
    lent for one batch and kept for the next: as many as batches are encoded at once, however
    many files are open (a writer holding its own would hold one batch's lines per open file),
    and freed with their owner (a run's :class:`CleanedOutputs`)."""

    def __init__(self):
        self.made = 0
        self._free: list = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lend(self):
        with self._lock:
            lines = self._free.pop() if self._free else None
            if lines is None:
                self.made += 1
        if lines is None:
            from hrm_assets._core import JsonLines

            lines = JsonLines()
        try:
            yield lines
        finally:
            with self._lock:
                self._free.append(lines)


class JsonlWriter:
    """Streams rows to ``path`` as JSONL with keys in ``columns`` order; the file appears only
    when the writer exits cleanly. ``buffers``: where its batches' lines are encoded (default:
    its own)."""

    def __init__(
        self,
        path: Path,
        columns: Sequence[str] = FIELDS,
        group: AtomicGroup | None = None,
        buffers: LineBuffers | None = None,
    ):
        if sorted(columns) != sorted(FIELDS):
            raise ValueError(f"columns {list(columns)} must be {list(FIELDS)} in some order")
        self.path = Path(path)
        self.columns = tuple(columns)
        self.rows = 0
        self._stack = contextlib.ExitStack()
        self._handle = None
        self._group = group
        self._buffers = buffers

    def __enter__(self) -> JsonlWriter:
        if self._group is None:
            self._handle = self._stack.enter_context(atomic_file(self.path, "wb"))
        else:  # renamed into place with the run's other outputs
            self._handle = self._group.open(self.path)
            self._stack.push(self._group.closer(self._handle))
        return self

    def write(self, row: Row) -> None:
        self._handle.write(jsonl_line(row, self.columns))
        self.rows += 1

    def write_batch(self, rows, text_bytes: int | None = None) -> None:
        """Append rows given as Arrow columns named after the row fields, in order (their
        lines built on the columns, into a buffer kept from batch to batch: ``jsonl_columns``)."""
        if self._buffers is None:
            self._buffers = LineBuffers()
        with self._buffers.lend() as lines:
            self._handle.write(encode_jsonl_lines(lines, rows, self.columns))
        self.rows += rows.num_rows

    def __exit__(self, *exc_info) -> bool:
        self._buffers = None
        return self._stack.__exit__(*exc_info)


def open_writer(
    path: Path,
    fmt: str,
    columns: Sequence[str] = FIELDS,
    budget: BufferBudget | None = None,
    group: AtomicGroup | None = None,
    line_buffers: LineBuffers | None = None,
):
    """A streaming writer for a cleaned file of format ``jsonl`` or ``parquet`` with its fields
    in ``columns`` order; Parquet writers that share ``budget`` bound their memory together,
    JSONL writers that share ``line_buffers`` their encoded lines; with ``group``, the file is
    renamed into place when the group commits."""
    if fmt == "jsonl":
        return JsonlWriter(path, columns, group, line_buffers)
    if fmt == "parquet":
        return ParquetRowWriter(path, columns, budget, group=group)
    raise ValueError(f"unknown cleaned format {fmt!r} (expected jsonl or parquet)")


def raise_open_files_limit() -> bool:
    """Raise this process's soft limit of open files to its hard limit; False if it was there."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft * 4, 1 << 16)
    if soft != resource.RLIM_INFINITY and soft >= target:
        return False
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return True


class CleanedOutputs:
    """The writers of one cleaning run, opened on first use; all commit or none do (one
    :class:`AtomicGroup`: the files are synced together, then renamed).

    A writer may be closed early (:meth:`close`: its file is complete, and renamed with the
    others); the writers still open when the run ends are closed on ``threads`` threads."""

    def __init__(self, out_root: Path, fmt: str, columns: Sequence[str] = FIELDS, threads: int = 1):
        self.out_root = Path(out_root)
        self.fmt = fmt
        self.columns = tuple(columns)
        self.threads = max(1, threads)
        self.budget = BufferBudget()
        self.line_buffers = LineBuffers()
        self.writers: dict[str, JsonlWriter | ParquetRowWriter] = {}
        self._open_writers: dict[str, JsonlWriter | ParquetRowWriter] = {}
        self._lock = threading.Lock()
        self.group = AtomicGroup()
        self.written: set[str] = set()  # files written whole by write_whole
        self._schema: pa.Schema | None = None

    def __enter__(self) -> CleanedOutputs:
        return self

    def writer(self, relative: str, budget: BufferBudget | None = None):
        """The writer of ``relative``, opened on first use (safe from several threads: a
        writer itself is used by one thread, the one cleaning the part that writes it);
        ``budget`` bounds its buffers with others' (default: the run's)."""
        writer = self.writers.get(relative)
        if writer is not None:
            return writer
        with self._lock:
            if relative not in self.writers:
                opened = self._open_or_raise(relative, budget or self.budget)
                self.writers[relative] = self._open_writers[relative] = opened
            return self.writers[relative]

    def write_whole(self, relative: str, table: pa.Table) -> None:
        """Write the whole Parquet file of ``relative`` from ``table`` in one call (its rows
        fit :func:`fits_one_write`: one row group of single-chunk columns), without a
        streaming writer; it is committed with the run's other files."""
        with self._lock:
            if relative in self.writers or relative in self.written:
                raise ValueError(f"{relative}: already written")
            self.written.add(relative)
        if self._schema is None:
            import pyarrow as pa

            self._schema = pa.schema([(name, pa.string()) for name in self.columns])
        with self.group.open(self.out_root / relative) as handle:
            write_one_row_group(handle, table, self._schema)

    def has_file(self, relative: str) -> bool:
        """Whether the run writes a file for ``relative``."""
        return relative in self.writers or relative in self.written

    def is_open(self, relative: str) -> bool:
        """Whether ``relative`` has a streaming writer that takes rows (opened, not closed)."""
        return relative in self._open_writers

    def close(self, relative: str) -> None:
        """Finish the file of ``relative`` now (its writer takes no more rows)."""
        with self._lock:
            writer = self._open_writers.pop(relative, None)
        if writer is not None:
            writer.__exit__(None, None, None)

    def _open_or_raise(self, relative: str, budget: BufferBudget):
        path = self.out_root / relative
        try:
            return self._open(path, budget)
        except OSError as exc:
            # A routed JSONL source holds a file per output.
            if exc.errno != errno.EMFILE or not raise_open_files_limit():
                raise OSError(
                    exc.errno,
                    f"{path}: too many open files ({len(self.writers)} cleaned outputs "
                    f"already open); raise the limit (ulimit -n)",
                ) from exc
            return self._open(path, budget)

    def _open(self, path: Path, budget: BufferBudget):
        writer = open_writer(path, self.fmt, self.columns, budget, self.group, self.line_buffers)
        writer.__enter__()
        return writer

    def _abort_open(self, exc_info) -> None:
        writers, self._open_writers = list(self._open_writers.values()), {}
        for writer in reversed(writers):
            with contextlib.suppress(Exception):
                writer.__exit__(*exc_info)

    def _close_open(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        writers, self._open_writers = list(self._open_writers.values()), {}
        errors: list[BaseException] = []

        def finish(writer) -> None:
            if errors:  # one failed: the run is lost, the others are discarded
                writer.__exit__(RuntimeError, RuntimeError("another output failed"), None)
                return
            try:
                writer.__exit__(None, None, None)
            except BaseException as error:
                errors.append(error)

        if self.threads == 1 or len(writers) < 2:
            for writer in writers:
                finish(writer)
        else:
            with ThreadPoolExecutor(max_workers=self.threads) as pool:
                list(pool.map(finish, writers))
        if errors:
            raise errors[0]

    def __exit__(self, *exc_info) -> bool:
        if exc_info[0] is not None:
            self._abort_open(exc_info)
            self.group.abort()
            return False
        try:
            self._close_open()
        except BaseException:
            self.group.abort()
            raise
        self.group.commit()
        return False
