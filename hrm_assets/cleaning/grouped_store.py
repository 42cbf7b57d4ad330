"""Rows grouped by output file and kept for a second pass (the columnar engine's store).

A unit reading a part whose rows go to many files (FLAN's tasks) keeps each batch's rows,
grouped by file, until the part is read; then each file is written from its groups. The
groups are written by the Rust core (``rust_tokenizer/src/grouped_rows.rs``) straight from the
batch's text columns in each group's row order, into a block of memory while the run's stores
hold less than their :class:`StoreBudget`, else into a spill file; a file's groups are later
gathered back into one column each, their text read from the spill file straight into place.

Before, a batch was first sorted into a grouped copy (``take``), written as an Arrow IPC file
of one record batch per group, and each file's groups were read back one by one and joined
into yet another copy: three fresh allocations of every stored byte (each faulted in and
zeroed by the kernel) where one remains, the gathered column the file is written from.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


class StoreBudget:
    """Rows the stores of one run keep in memory, over all of them (the units of every part
    and file being read at once, and those waiting for their part's other files): a batch that
    would take them past ``limit`` bytes goes to its store's spill file."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.held = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        """Hold ``size`` more bytes if they fit within the limit; whether they did."""
        with self._lock:
            if self.held + size > self.limit:
                return False
            self.held += size
            return True

    def give_back(self, size: int) -> None:
        with self._lock:
            self.held -= size


@dataclass(frozen=True, eq=False)
class StoredGroup:
    """Where a group's rows are kept: ``source`` is its store's spill file descriptor or its
    memory block, ``position`` its first byte there; ``text`` the UTF-8 bytes of each of its
    columns."""

    source: int | bytes
    position: int
    rows: int
    text: tuple[int, ...]

    @property
    def text_bytes(self) -> int:
        return sum(self.text)


def group_bytes(rows: int, text: Sequence[int]) -> int:
    """Bytes a group takes in its store: for each column, its rows' end offsets and text."""
    return sum(8 * rows + size for size in text)


class GroupStore:
    """Groups of rows kept for a second pass, in memory while the run's stores hold less than
    ``budget``'s limit, beyond it in a spill file named as a temporary of ``output`` (the next
    run of the source removes it if this one dies: ``hrm_assets.cleaning.leftovers``)."""

    def __init__(self, output: Path, budget: StoreBudget):
        self.output = Path(output)
        self.budget = budget
        self.held = 0
        self.names: list[str] | None = None
        self.blocks: list[bytes] = []
        self.path: Path | None = None
        self.size = 0  # bytes in the spill file
        self._fd: int | None = None

    def add(
        self, rows: pa.Table, order: np.ndarray | None, bounds: np.ndarray
    ) -> list[StoredGroup]:
        """Keep the groups of ``rows``: group ``g`` is the rows ``order[bounds[g]:bounds[g+1]]``
        (``order`` None: the rows in their order). Every column of ``rows`` is text without a
        null (the engine has dropped the rows with one)."""
        import numpy as np

        from hrm_assets._core import memory_groups, spill_groups
        from hrm_assets.cleaning.arrow_buffers import text_chunk_buffers

        if self.names is None:
            self.names = rows.column_names
        elif rows.column_names != self.names:
            raise ValueError(f"rows of columns {rows.column_names} kept with {self.names}")
        # The columns' chunks as they are (batches grouped together are not joined first).
        columns = [text_chunk_buffers(rows.column(name), name) for name in self.names]
        bounds = np.ascontiguousarray(bounds, dtype=np.int64)
        if order is not None:
            order = np.ascontiguousarray(order, dtype=np.int64)
        counts = np.diff(bounds)
        # What the groups take when they are all the rows, as the engine stores them (the
        # core refuses groups that name rows the columns lack).
        text = sum(int(offsets[-1] - offsets[0]) for chunks in columns for offsets, _ in chunks)
        size = 8 * len(self.names) * int(counts.sum()) + text
        spilled = not self.budget.take(size)
        if not spilled:
            self.held += size
            block, sizes = memory_groups(columns, order, bounds)
            self.blocks.append(block)
            source, position = block, 0
        else:
            if self._fd is None:
                self._open_spill()
            source, position = self._fd, self.size
            try:
                sizes = spill_groups(self._fd, position, columns, order, bounds)
            except OSError as error:
                raise type(error)(
                    f"{self.path}: writing the cleaning spill file: {error}"
                ) from error
        width = len(self.names)
        stored = []
        for count, start in zip(counts.tolist(), range(0, len(sizes), width), strict=True):
            text = tuple(sizes[start : start + width])
            stored.append(StoredGroup(source, position, count, text))
            position += group_bytes(count, text)
        if spilled:
            self.size = position
        return stored

    def _open_spill(self) -> None:
        from hrm_assets.cleaning.cleaned_parquet import new_spill_path

        self.path = new_spill_path(self.output)
        # Opened as created, not truncated: ext4 writes a file truncated at its open to disk
        # when it is closed (auto_da_alloc), which a spill file removed seconds later does
        # not need.
        self._fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)

    def rows(self, group: StoredGroup) -> pa.Table:
        """The rows of one group."""
        return gathered([group], self.names)

    def close(self) -> None:
        """Let the memory and the spill file go; the groups may not be read after this."""
        self.blocks = []
        self.budget.give_back(self.held)
        self.held = 0
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


def gathered(groups: Sequence[StoredGroup], names: Sequence[str]) -> pa.Table:
    """The rows of ``groups`` (of one store or several open ones), joined in order as one
    table of columns ``names``, each a single chunk: ``string`` while its text fits int32
    offsets, else ``large_string``."""
    import pyarrow as pa

    from hrm_assets._core import gather_groups
    from hrm_assets.cleaning.arrow_buffers import text_array_of

    pieces = [(group.source, group.position, group.rows, list(group.text)) for group in groups]
    try:
        columns = gather_groups(pieces, len(names))
    except OSError as error:
        raise type(error)(f"reading back the cleaning spill file: {error}") from error
    return pa.table(
        {name: text_array_of(*column) for name, column in zip(names, columns, strict=True)}
    )
