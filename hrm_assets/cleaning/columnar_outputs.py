"""Where the columnar engine's checked rows go (:class:`OutputUnit`): straight to their
writer when a batch has one output, else grouped per output and kept in a :class:`GroupStore`
(memory within the run's :class:`StoreBudget`, then a spill file) until the part is read, then
written file by file within a :class:`WriteGate`, by the unit's thread or handed to the
engine's threads as :class:`PartWrites`; a part whose files were read in parallel has its
files written from its units' rows joined in file order."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hrm_assets.cleaning.arrow_buffers import index_array, integers
from hrm_assets.cleaning.cleaned_parquet import (
    BufferBudget,
    ParquetSegment,
    fits_one_write,
)
from hrm_assets.cleaning.grouped_store import GroupStore, StoreBudget, StoredGroup, gathered
from hrm_assets.cleaning.outputs import CleanedOutputs
from hrm_assets.cleaning.report import PREVIEW_CHARS, PREVIEW_ROWS
from hrm_assets.cleaning.rows import FIELDS, Row

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from hrm_assets.cleaning.sources.spec import SourceSpec

GROUPED_BYTES = 16 * 1024 * 1024
"""A unit groups the batches it stores together until they hold this much: FLAN's 16K-row
batches (about 14 MB each) two at a time. Each output then gets one stored piece per group
instead of one per batch, and its file is written from half as many pieces (every piece costs
a store message, a read-back and a join). The batches waiting are the reading thread's, like
the batch it reads: about one more FLAN batch per unit being read."""


class WriteGate:
    """Text that threads may hold at once while writing files: a file's last row group is
    materialized whole (pyarrow writes a row group in one call), so two threads finishing
    large files together would hold both. A thread waits while others hold ``limit`` bytes
    with its own, unless nothing is held (a file larger than the limit still gets written),
    and threads enter in the order they came: a file larger than the limit waits for the
    files being written, not for a moment when nothing is held, which a thread taking one
    small file after another never left (tasksource's 36 MB WANLI file waited 1.4-2.1 s, then
    was written alone at the end)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0
        self._changed = threading.Condition()
        self._arrived = 0  # tickets handed out
        self._turn = 0  # the ticket that may enter next

    @contextlib.contextmanager
    def hold(self, size: int):
        with self._changed:
            ticket, self._arrived = self._arrived, self._arrived + 1
            while ticket != self._turn or (self.used and self.used + size > self.limit):
                self._changed.wait()
            self._turn += 1
            self.used += size
            self._changed.notify_all()  # the next ticket may fit beside this one
        try:
            yield
        finally:
            with self._changed:
                self.used -= size
                self._changed.notify_all()


@dataclass
class PartWrites:
    """The files of a part whose rows are all read, for any thread to write: ``files`` write
    one file each (largest first), in any order and at once (a file's bytes never depend on
    another's), then ``close`` frees the part's stores, once, after the last."""

    files: list[Callable[[], None]]
    close: Callable[[], None]


class OutputUnit:
    """Where the checked rows of some parts go: straight to their writer when a batch has one
    output (SYNTH), else grouped by output with one stable sort per :data:`GROUPED_BYTES`
    of batches and kept in a :class:`GroupStore` (memory within ``store_budget``, shared by
    the run's units, then its spill file) until :meth:`finish` writes the files, each from
    its groups gathered and closed at once.
    Memory then holds about one output's row group per thread, whatever the number of
    outputs (FLAN's thousands of tasks) and of rows.

    A unit reading a later file of a part (``write_through`` False) keeps every row for the
    part's first unit to write after its own rows (:meth:`finish` with ``later``): in its
    store, grouped per output, or, while every output of its batches has a Parquet writer
    open, in a :class:`ParquetSegment` per output that the writer takes over.

    With ``defer``, :meth:`finish` writes nothing itself: it hands the part's files to
    ``defer`` as :class:`PartWrites`, which closes the part's units after the last file."""

    def __init__(
        self,
        spec: SourceSpec,
        outputs: CleanedOutputs,
        budget: int,
        gate: WriteGate | None,
        store_budget: StoreBudget | None = None,
        write_through: bool = True,
        defer: Callable[[PartWrites], None] | None = None,
    ):
        self.spec = spec
        self.defer = defer
        self.outputs = outputs
        self.gate = gate or WriteGate(budget)
        self.write_through = write_through
        # outputs written through -> their text since they were opened
        self.direct: dict[str, int] = {}
        # For the writers written through (SYNTH's), or else for the store (FLAN's groups).
        self.budget = BufferBudget(max(1, budget))
        self.store: GroupStore | None = None
        self.store_budget = store_budget or StoreBudget(budget)
        # output -> its stored groups in read order; outputs in first-appearance order
        self.pieces: dict[str, list[StoredGroup]] = {}
        # batches waiting to be grouped and stored together: (files, codes, rows, reports)
        self.waiting: list[tuple[list[str], np.ndarray, pa.Table, list]] = []
        # route -> the checked output path, for the batches of these parts
        self.routes: dict[str, str] = {}
        # A later file's rows of outputs whose Parquet writer is open (OpenMathInstruct-2's
        # cot and direct), gathered as that writer would buffer and spill them: the writer
        # takes them over at the finish without spilling them again.
        self.segments: dict[str, ParquetSegment] = {}

    def __enter__(self) -> OutputUnit:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Remove the store (its memory and spill file); the unit takes no more rows."""
        self.waiting = []
        if self.store is not None:
            self.store.close()
        for segment in self.segments.values():
            segment.close()

    def add(self, files: list[str], codes: np.ndarray, rows: pa.Table, reports: list) -> None:
        import numpy as np

        counts = np.bincount(codes, minlength=len(files))
        present = np.flatnonzero(counts)
        stored = bool(self.pieces or self.waiting)  # later rows of an output go after these
        through = self.write_through and not stored
        continues = not self.write_through and not stored and self.outputs.fmt == "parquet"
        if through and len(present) == 1:
            # One output: write through (its writer buffers up to a row group, within budget).
            relative, file_report = files[int(present[0])], reports[int(present[0])]
            text = int(_text_lengths(rows).sum())
            self.outputs.writer(relative, self.budget).write_batch(rows, text)
            self.direct[relative] = self.direct.get(relative, 0) + text
            _account(file_report, rows)
            return
        opened = all(self.outputs.is_open(files[int(code)]) for code in present)
        if (through or continues) and opened:
            # Every output here has its streaming writer open (static outputs, such as
            # OpenMathInstruct-2's cot and direct): each group goes straight to its writer
            # (to a segment the writer takes over, for a later file), which spills a large row
            # group itself; storing the rows would spill them twice.
            # One take per output (a writer holding its group must not pin the others' rows),
            # or a zero-copy slice where the rule gave the output's rows together.
            for code in present.tolist():
                positions, relative = np.flatnonzero(codes == code), files[code]
                first, count = int(positions[0]), len(positions)
                if int(positions[-1]) - first + 1 == count:
                    group = rows.slice(first, count)
                else:
                    group = rows.take(index_array(positions))
                text = int(_text_lengths(group).sum())
                if through:
                    self.outputs.writer(relative, self.budget).write_batch(group, text)
                    self.direct[relative] = self.direct.get(relative, 0) + text
                else:
                    self._segment(relative).write_batch(group, text)
                _account(reports[code], group)
            return
        self.waiting.append((files, codes, rows, reports))
        if sum(batch_rows.nbytes for _, _, batch_rows, _ in self.waiting) >= GROUPED_BYTES:
            self._store_waiting()

    def _store_waiting(self) -> None:
        """Group the waiting batches' rows by output, in read order, and store the groups."""
        import numpy as np
        import pyarrow as pa

        waiting, self.waiting = self.waiting, []
        if not waiting:
            return
        if len(waiting) == 1:
            files, codes, rows, reports = waiting[0]
        else:
            # The batches' own file lists, merged: an output keeps its first code.
            files, reports, recoded, index = [], [], [], {}
            for batch_files, batch_codes, _, batch_reports in waiting:
                merged = np.empty(len(batch_files), dtype=np.int64)
                for code, (relative, file_report) in enumerate(
                    zip(batch_files, batch_reports, strict=True)
                ):
                    if relative not in index:
                        index[relative] = len(files)
                        files.append(relative)
                        reports.append(file_report)
                    merged[code] = index[relative]
                recoded.append(merged[batch_codes])
            codes = np.concatenate(recoded)
            rows = pa.concat_tables([batch_rows for _, _, batch_rows, _ in waiting])
        self._store(files, codes, rows, reports)

    def _store(self, files: list[str], codes: np.ndarray, rows: pa.Table, reports: list) -> None:
        import numpy as np
        import pyarrow as pa

        if self.store is None:
            first = self.outputs.out_root / files[int(codes[0])]
            self.store = GroupStore(first, self.store_budget)
        counts = np.bincount(codes, minlength=len(files))
        present = np.flatnonzero(counts)
        starts = np.cumsum(counts) - counts
        if len(present) == 1:  # one group already (a later file's unit): rows in their order
            order, appearance = None, present
        else:
            # A batch names far fewer than 2**16 files: numpy sorts 16-bit keys by radix.
            sort_keys = codes.astype(np.uint16) if len(files) <= 1 << 16 else codes
            order = np.argsort(sort_keys, kind="stable")
            # Outputs by their first row in the batch, the first of their group once sorted.
            appearance = present[np.argsort(order[starts[present]], kind="stable")]
        # The groups are stored by output code; each output's pieces go in read order.
        bounds = np.append(starts[present], starts[present[-1]] + counts[present[-1]])
        stored = dict(zip(present.tolist(), self.store.add(rows, order, bounds), strict=True))
        # Conditions per file with one count over the batch, not one per file.
        conditions = rows.column("condition").combine_chunks().dictionary_encode()
        names = conditions.dictionary.to_pylist()
        if len(names) > 1:
            pairs = np.bincount(
                codes * len(names) + integers(conditions.indices),
                minlength=len(files) * len(names),
            ).reshape(len(files), len(names))
        for code in appearance.tolist():
            group = stored[code]
            self.pieces.setdefault(files[code], []).append(group)
            file_report = reports[code]
            file_report.rows += group.rows
            if len(names) == 1:  # one condition in the batch (FLAN: its subset's)
                file_report.conditions[names[0]] += group.rows
            else:
                for index in np.flatnonzero(pairs[code]):
                    file_report.conditions[names[index]] += int(pairs[code, index])
            missing = PREVIEW_ROWS - len(file_report.preview)
            if missing > 0:
                start = int(starts[code])
                if order is None:
                    head = rows.slice(start, missing)
                else:
                    # Row by row: a take from a table of several chunks joins them first.
                    positions = order[start : start + min(missing, group.rows)].tolist()
                    head = pa.concat_tables([rows.slice(row, 1) for row in positions])
                _preview(file_report, head)

    def _segment(self, relative: str) -> ParquetSegment:
        if relative not in self.segments:
            path, columns = self.outputs.out_root / relative, self.outputs.columns
            self.segments[relative] = ParquetSegment(path, columns, self.budget).__enter__()
        return self.segments[relative]

    def finish(self, threads: int = 1, later: Sequence[OutputUnit] = ()) -> None:
        """Write every stored output and finish every file of the unit, ``threads`` files at
        a time (the bytes of a file never depend on the others) within the write gate.

        ``later``: the units of the part's later files, read in parallel with this one; each
        output gets this unit's rows (written through, then stored), then theirs in file
        order, as if one unit had read the files one after the other. With ``defer`` (see
        the class), the files are handed over instead, ``threads`` unused."""

        # The rows are in the store already: their writer buffers them up to a row group
        # instead of spilling them a second time.
        unbounded = BufferBudget(1 << 62)

        def write(item: tuple[str, list[tuple[object, StoredGroup | None, int]]]) -> None:
            # (store, group, text) of stored rows, or (segment, None, text it holds in memory)
            relative, pieces = item
            text = self.direct.get(relative, 0) + sum(p[2] for p in pieces)
            with self.gate.hold(self._pending_text(relative, pieces)):
                rows = sum(group.rows for _, group, _ in pieces if group is not None)
                if self._whole_file(relative, rows, text):
                    # Most task files: one table of the groups gathered, one call, no
                    # streaming writer.
                    groups = [group for _, group, _ in pieces]
                    self.outputs.write_whole(relative, gathered(groups, pieces[0][0].names))
                    return
                writer = self.outputs.writer(relative, unbounded)
                for source, key, piece_text in pieces:
                    if key is None:
                        writer.append_segment(source)
                    else:
                        writer.write_batch(source.rows(key), piece_text)
                self.outputs.close(relative)

        joined: dict[str, list[tuple[object, StoredGroup | None, int]]] = {}
        for unit in (self, *later):
            unit._store_waiting()
            # A later file's segment holds its first rows of the output, its pieces the rest.
            for relative, segment in unit.segments.items():
                joined.setdefault(relative, []).append((segment, None, segment.buffered))
            for relative, groups in unit.pieces.items():
                joined.setdefault(relative, []).extend(
                    (unit.store, group, group.text_bytes) for group in groups
                )
            unit.pieces = {}
        items = list(joined.items())
        items += [(relative, []) for relative in self.direct if relative not in joined]
        if self.defer is not None:
            # Largest first, so that the run does not end on one large file.
            items.sort(key=lambda item: -self._pending_text(*item))
            units = (self, *later)

            def close() -> None:
                for unit in units:
                    unit.close()

            self.defer(PartWrites([functools.partial(write, item) for item in items], close))
            return
        if threads == 1 or len(items) < 2:
            for item in items:
                write(item)
            return
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="clean-write") as pool:
            list(pool.map(write, items))

    def _pending_text(self, relative: str, pieces: list[tuple[object, object, int]]) -> int:
        """Text that writing ``relative`` still encodes: its stored pieces and what its open
        writer buffers (rows written through are held by their writer only up to a large row
        group's threshold, past it in its spill file: what it holds counts, not their text)."""
        writer = self.outputs.writers.get(relative)
        return sum(piece[2] for piece in pieces) + getattr(writer, "buffered", 0)

    def _whole_file(self, relative: str, rows: int, text: int) -> bool:
        """Whether ``relative`` is written in one call: a Parquet file that no writer holds
        rows of yet (a static output's writer is opened, empty, before any row)."""
        return (
            self.outputs.fmt == "parquet"
            and relative not in self.direct
            and not self.outputs.has_file(relative)
            and fits_one_write(rows, text)
        )


def _account(file_report, rows: pa.Table) -> None:
    """Add written ``rows`` to their file's report: count, conditions, preview."""
    import pyarrow.compute as pc

    file_report.rows += rows.num_rows
    for item in pc.value_counts(rows.column("condition")).to_pylist():
        file_report.conditions[item["values"]] += item["counts"]
    _preview(file_report, rows)


def _text_lengths(rows: pa.Table) -> np.ndarray:
    """UTF-8 bytes of each row's three strings."""
    import numpy as np
    import pyarrow.compute as pc

    total = np.zeros(rows.num_rows, dtype=np.int64)
    for name in FIELDS:
        lengths = pc.binary_length(rows.column(name)).combine_chunks()
        total += integers(lengths, null_as=0)
    return total


def _preview(file_report, rows: pa.Table) -> None:
    missing = PREVIEW_ROWS - len(file_report.preview)
    if missing <= 0:
        return
    head = rows.slice(0, missing)
    columns = [head.column(name).to_pylist() for name in FIELDS]
    for values in zip(*columns, strict=True):
        file_report.preview.append(Row(*(value[:PREVIEW_CHARS] for value in values)))
