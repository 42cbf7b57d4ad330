"""The columnar cleaning engine: raw record batches -> a source's :class:`ColumnarRule` ->
validated columns -> the cleaned writers, part by part, parts in parallel.

Used by :func:`hrm_assets.cleaning.clean.clean_source` for a local-file source that has a
``columnar`` rule; the rows, files, bytes and report are those of the row path:

- every raw record batch (``COLUMNAR_BATCH_ROWS`` rows, so a large raw row group is read in
  slices) goes through the rule; the rows it gives are checked as ``check_row`` checks them
  (null fields, unknown condition tags, text that is not UTF-8), only the rows that fail being
  turned into Python objects;
- a batch with one output goes to its writer as Arrow columns; otherwise its rows are
  grouped by output file with a stable sort (read order kept within each file) and kept in a
  ``grouped_store.GroupStore`` (memory, then a spill file) until the part is read, when each
  file is written from its groups gathered and closed (a second pass: memory does not grow
  with the number of outputs nor of rows);
- skipped records are counted by reason, with the first examples in read order;
- parts are cleaned in parallel threads (pyarrow releases the GIL in its kernels, readers and
  writers) when the rule says no two parts write the same file; each part has its own report,
  merged in part order, and its own share of the writers' buffer budget, so files and report
  do not depend on the number of threads;
- on several threads the files of a part are read in parallel too (:class:`_FileUnit`): a
  later file's rows wait in its own store, and once the part's files are read its outputs are
  written in file order, the reports joined as if the files were read one after the other;
- reading and writing share the threads (:class:`_Schedule`): once a part is read, its files
  are written one by one by whichever threads the reads leave, while the next parts are read;
- a part read alone has a helper thread decode its next batches and the other cores apply
  the rule and the row checks to them, ahead of the thread that records and writes the
  batches, in read order (:func:`_read_ahead`, :func:`_prepared_in_order`); where every
  thread reads a part of its own, each decodes its own batches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from hrm_assets.cleaning.arrow_buffers import (
    boolean_array,
    integers,
    null_flags,
    string_scalar,
    true_flags,
)
from hrm_assets.cleaning.checks import check_row
from hrm_assets.cleaning.columnar import (
    COLUMNAR_BATCH_ROWS,
    CleanedBatch,
    NotColumnar,
    batch_raw_bytes,
)
from hrm_assets.cleaning.columnar_outputs import OutputUnit, PartWrites, StoreBudget, WriteGate
from hrm_assets.cleaning.outputs import CleanedOutputs
from hrm_assets.cleaning.report import (
    MAX_SKIP_EXAMPLES,
    CleaningReport,
    SkipCount,
    SkipExample,
)
from hrm_assets.cleaning.rows import FIELDS, unknown_tags

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from hrm_assets.cleaning.sources.spec import SourceSpec

Progress = Callable[[int], None] | None

DEFAULT_BUFFER_BYTES = 32 * 1024 * 1024
"""Rows held in memory by one run, over all its threads: grouped batches waiting for their
files and rows waiting for their row group; beyond it they go to spill files."""


def default_threads() -> int:
    """Threads for cleaning parts in parallel: every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def columnar_parts(spec: SourceSpec, raw_root: Path | None) -> list[tuple[str, list[Path]]] | None:
    """``(part, files)`` of a source the columnar engine can clean, else None (no rule, the
    Hub itself, a Hub mirror in JSONL, or a raw file whose columns the rule leaves to the row
    path). A file whose schema cannot be read gives None too: the row path reports it as it
    always has."""
    rule = spec.columnar
    if rule is None or raw_root is None:
        return None
    try:
        found = _local_parts(spec, raw_root)
        if not found:
            return None
        for _, files in found:
            for path in files:
                rule.check_schema(rule.read_schema(path))
    except (NotColumnar, OSError, ValueError):
        return None
    return found


def _local_parts(spec: SourceSpec, raw_root: Path) -> list[tuple[str, list[Path]]] | None:
    """The parts and files of a local raw root: a local layout's, or a Hub mirror's configs
    when every one is Parquet (a JSONL mirror is read by ``datasets``, whose JSON typing the
    row path keeps)."""
    from hrm_assets.cleaning.sources.hub import HubLayout
    from hrm_assets.cleaning.sources.local_files import LocalLayout

    layout = spec.layout
    if spec.columnar.part_files is not None:
        return spec.columnar.part_files(spec, raw_root)
    if isinstance(layout, LocalLayout):
        return layout.part_files(spec, layout.root(spec, raw_root))
    if type(layout) is not HubLayout:  # subclasses read their files in their own way
        return None
    parts = []
    for config in layout.config_names(spec, raw_root):
        builder, files = layout.local_files(spec, raw_root, config)
        if builder != "parquet":
            return None
        parts.append((config, files))
    return parts


def clean_parts_columnar(
    spec: SourceSpec,
    parts: list[tuple[str, list[Path]]],
    outputs: CleanedOutputs,
    report: CleaningReport,
    read_error: Callable[[str, CleaningReport, Exception], Exception],
    progress: Progress = None,
    progress_bytes: Progress = None,
    threads: int | None = None,
) -> None:
    """Clean ``parts`` into ``outputs``, adding to ``report`` in part order.

    ``read_error(part, report, error)`` turns a raw read failure into the error raised.
    ``threads`` (default: every core) clean parts in parallel when the source's rule allows.
    """
    threads = default_threads() if threads is None else max(1, threads)
    feed = (progress, progress_bytes)
    if not spec.columnar.parts_disjoint:  # one pass over every part, then the files
        with OutputUnit(spec, outputs, DEFAULT_BUFFER_BYTES, None) as unit:
            for part, files in parts:
                _clean_part(spec, part, files, unit, report, read_error, *feed, threads)
            unit.finish(threads)
        return
    if files_in_parallel(spec, parts, threads):
        by_part = _file_units(spec, parts)
    else:
        by_part = [[_FileUnit(part, files)] for part, files in parts]
    work = [item for siblings in by_part for item in siblings]
    workers = min(threads, len(work)) or 1
    rule_threads = max(1, threads // workers)  # a file read alone cleans batches on every core
    share = max(1, DEFAULT_BUFFER_BYTES // workers)
    store_budget = StoreBudget(DEFAULT_BUFFER_BYTES)
    gate = WriteGate(DEFAULT_BUFFER_BYTES)
    # Largest part first, so that the last units to be read are small; a part's files one
    # after the other, so that few parts wait for their last file (and hold the stores'
    # memory) at once.
    largest = sorted(by_part, key=lambda siblings: -sum(s.size for s in siblings))
    order = {id(item): index for index, item in enumerate(work)}
    schedule = _Schedule(
        [(order[id(item)], item) for siblings in largest for item in siblings], threads
    )
    lock = threading.Lock()

    def one(item: _FileUnit) -> None:
        item.unit = OutputUnit(
            spec, outputs, share, gate, store_budget, item.first, defer=schedule.write
        )
        siblings = item.siblings
        try:
            _clean_part(
                spec,
                item.part,
                item.files,
                item.unit,
                item.report,
                read_error,
                *feed,
                rule_threads,
                item.before,
                item.rechecks,
            )
        except BaseException:
            item.failed = True
            raise
        finally:
            with lock:
                item.read = True
                last = all(sibling.read for sibling in siblings)  # true in one thread only
        if last and not any(sibling.failed for sibling in siblings):
            # The part's files go to the schedule, written by the threads the reads leave.
            later = [sibling.unit for sibling in siblings[1:]]
            siblings[0].unit.finish(threads, later)

    try:
        schedule.run(one)
    finally:
        for item in work:
            if item.unit is not None:
                item.unit.close()
    for siblings in by_part:
        report.merge(_joined_report(siblings))


class _Schedule:
    """The units a run reads and the files it writes, taken by ``threads`` workers: a free
    worker writes a file of a part already read while at least half the others (one, on two
    threads) read, else it reads the next unit; so on two threads one part's files are
    written while the next part is read, both cores busy to the end. On one thread a part's
    files are written as soon as it is read.

    ``reads``: ``(position, unit)`` in the order to read them, ``position`` the unit's in
    the serial engine's order. A failure stops the handing out; the one raised is the one
    the serial engine would raise: the earliest by position, a part's writes after its
    reads."""

    def __init__(self, reads: Sequence[tuple[int, _FileUnit]], threads: int):
        import collections

        self.threads = threads
        self.reads = collections.deque(reads)
        # (order, file's write, its part's writes, files of the part left)
        self.writes: collections.deque = collections.deque()
        self.reading = 0
        self.errors: list[tuple[tuple[int, int], BaseException]] = []
        self._changed = threading.Condition()
        self._local = threading.local()  # the position of the unit this thread reads

    def write(self, part: PartWrites) -> None:
        """Queue the files of a part (called while its last unit is read, by its thread)."""
        if not part.files:
            part.close()
            return
        left = [len(part.files)]
        with self._changed:
            for write in part.files:
                self.writes.append((self._local.order, write, part, left))
            self._changed.notify_all()

    def run(self, read: Callable[[_FileUnit], None]) -> None:
        """Read every unit with ``read`` and write what it queues; raise the first failure."""
        if self.threads == 1:
            self._work(read)
        else:
            threads = [
                threading.Thread(target=self._work, args=(read,), name=f"clean_{index}")
                for index in range(self.threads)
            ]
            for thread in threads:
                thread.start()
            try:
                for thread in threads:
                    thread.join()
            except BaseException as interrupt:  # the units must not be closed under a worker
                with self._changed:
                    self.errors.append(((-1, 0), interrupt))
                    self._changed.notify_all()
                for thread in threads:
                    thread.join()
                raise
        if self.errors:
            raise min(self.errors, key=lambda found: found[0])[1]

    def _next(self):
        """The next task, ``("read", order, unit)`` or ``("write", order, entry)``; None when
        nothing is left (or a failure stopped the run). Called holding the lock."""
        while not self.errors:
            # ``reading`` counts the other threads: this one reads nothing while it asks.
            if self.reads and (
                not self.writes or (self.threads > 1 and self.reading < max(1, self.threads // 2))
            ):
                order, unit = self.reads.popleft()
                self.reading += 1
                return "read", order, unit
            if self.writes:
                entry = self.writes.popleft()
                return "write", entry[0], entry
            if not self.reading:
                return None
            self._changed.wait()
        return None

    def _work(self, read: Callable[[_FileUnit], None]) -> None:
        while True:
            with self._changed:
                task = self._next()
            if task is None:
                with self._changed:
                    self._changed.notify_all()
                return
            kind, order, subject = task
            try:
                if kind == "read":
                    self._local.order = order
                    read(subject)
                else:
                    _, write, part, left = subject
                    write()
                    with self._changed:
                        left[0] -= 1
                        done = not left[0]
                    if done:
                        part.close()
            except BaseException as error:
                with self._changed:
                    self.errors.append(((order, 0 if kind == "read" else 1), error))
            finally:
                with self._changed:
                    if kind == "read":
                        self.reading -= 1
                    self._changed.notify_all()


class _FileUnit:
    """Files of one part read by one thread into one :class:`OutputUnit`, with their own
    report: all of the part's files, or one of them when its files are read in parallel
    (``before``: the part's records in the files before it; ``first``: the part's first
    file, which writes through and finishes the part)."""

    def __init__(self, part: str, files: Sequence[Path], before: int = 0, first: bool = True):
        self.siblings: list[_FileUnit] = [self]  # the units of the part, in file order
        self.part = part
        self.files = list(files)
        self.before = before
        self.first = first
        self.size = sum(path.stat().st_size for path in self.files)
        self.report = CleaningReport("")
        self.unit: OutputUnit | None = None
        # check_row rejects kept as examples, with their values: their row numbers count
        # the part's earlier files' rows once those are known (_joined_report)
        self.rechecks: list[tuple[SkipExample, tuple]] | None = None if first else []
        self.read = False
        self.failed = False


def _file_units(spec: SourceSpec, parts: list[tuple[str, list[Path]]]) -> list[list[_FileUnit]]:
    """The units of each part (see :func:`files_in_parallel`): one per file of a part with
    several files where the rule counts a file's records (the later files' locators count the
    part's records before them); else one unit, reading the files one by one."""
    rule = spec.columnar
    by_part = []
    for part, files in parts:
        if len(files) < 2 or rule.count_rows is None:
            by_part.append([_FileUnit(part, files)])
            continue
        try:
            counts = [rule.count_rows(path) for path in files[:-1]]
        except (OSError, ValueError):  # read by one unit: the read error comes as it did
            by_part.append([_FileUnit(part, files)])
            continue
        starts = [0]
        for count in counts:
            starts.append(starts[-1] + count)
        siblings = [
            _FileUnit(part, [path], before, first=index == 0)
            for index, (path, before) in enumerate(zip(files, starts, strict=True))
        ]
        for sibling in siblings:
            sibling.siblings = siblings
        by_part.append(siblings)
    return by_part


def files_in_parallel(spec: SourceSpec, parts: list, threads: int) -> bool:
    """Whether the files of a part are read in parallel: when the parts are fewer than the
    threads (tasksource's one part of two shards; FLAN's three parts on two threads gained
    nothing measurable, so its parts alone keep the threads busy), and only where the rows are
    routed per row to many files, which a part's first file keeps in a store too, or by
    condition to static Parquet outputs (OpenMathInstruct-2's cot and direct), whose open
    writers take a later file's rows as a segment spilled once. GSM8K's rows, through an open
    JSONL writer, were measured slower split, through the later file's store or a segment
    file (docs/BENCHMARKS-cleaning.md, "Follow-up: a part's files in parallel" and
    "Follow-up: OpenMathInstruct-2's shards in parallel, its later shard spilled once")."""
    routed = spec.route is not None and not spec.one_output_per_part
    continued = spec.format == "parquet" and bool(spec.outputs_by_condition)
    return len(parts) < threads and (routed or continued)


def _joined_report(units: list[_FileUnit]) -> CleaningReport:
    """The report of a part from its units' reports, as if one unit had read its files in
    order: a later file's check_row examples renumbered after the earlier files' rows of
    their output file (and their messages, which name the number, made again)."""
    report = units[0].report
    for later in units[1:]:
        for example, values in later.rechecks:
            earlier = report.files.get(example.file)
            example.row += earlier.candidates if earlier is not None else 0
            _, problem = check_row(values, example.file, example.row)
            example.detail = problem[1]
        report.merge(later.report)
    return report


def _clean_part(
    spec: SourceSpec,
    part: str,
    files: Sequence[Path],
    unit: OutputUnit,
    report: CleaningReport,
    read_error: Callable[[str, CleaningReport, Exception], Exception],
    progress: Progress,
    progress_bytes: Progress,
    rule_threads: int = 1,
    before: int = 0,
    rechecks: list[tuple[SkipExample, tuple]] | None = None,
) -> None:
    """Clean the files of one part in order; ``rule_threads`` apply the rule (and the row
    checks) to the next batches while this one is recorded and written.

    ``rechecks``, for a unit reading a later file of the part (whose first unit's report
    comes first and names the part), gets the check_row rejects kept as examples with their
    values (see :func:`_joined_report`); ``before``: the part's records in its earlier
    files."""
    rule = spec.columnar
    first = rechecks is None
    if first:
        report.parts.append(part)
    if spec.one_output_per_part and first:
        unit.outputs.writer(spec.part_output(part), unit.budget)
        report.file(spec.part_output(part))
    read = before  # records of the part before the current batch (for the examples' locators)
    for path in files:
        size = path.stat().st_size
        rows_in_file = rule.count_rows(path) if rule.count_rows is not None else None

        def prepare(batch: pa.RecordBatch, file_read: int, path: Path = path):
            """The batch's cleaned rows, their UTF-8 checked (an error names the raw file
            and row), and the positions of the rows ``check_row`` may reject (none, and
            nothing checked, for rows the rule vouches for: ``CleanedBatch.checked``)."""
            cleaned = rule.clean(batch, part)
            if cleaned.checked:
                return cleaned, []
            _check_utf8(cleaned.rows, path, file_read, cleaned.records)
            return cleaned, _suspect_rows(cleaned.rows)

        batches = rule.read(path, rule.columns)
        if rule_threads > 1:
            # A part read alone: a helper decodes ahead while this thread records and writes.
            # Where every thread reads a unit of its own, one more thread a unit only
            # contends for the cores (FLAN: 0.2 s more wall, 70 MiB more memory).
            batches = _read_ahead(batches, depth=rule_threads)
        for batch, prepared in _prepared_in_order(batches, prepare, rule_threads):
            if batch is None:  # the read failed here
                if before:  # the error counts the part's records in its earlier files too
                    report = dataclasses.replace(report, records_read=report.records_read + before)
                raise read_error(part, report, prepared) from prepared
            cleaned, suspects = prepared()
            _record_batch(spec, part, read, cleaned, suspects, unit, report, rechecks)
            read += batch.num_rows
            report.records_read += batch.num_rows
            if rows_in_file is None:
                raw_bytes = batch_raw_bytes(batch)
            else:
                raw_bytes = size * batch.num_rows // max(1, rows_in_file)
            report.raw_bytes += raw_bytes
            if progress is not None:
                progress(batch.num_rows)
            if progress_bytes is not None:
                progress_bytes(raw_bytes)


def _prepared_in_order(
    batches: Iterator[pa.RecordBatch],
    prepare: Callable[[pa.RecordBatch, int], object],
    threads: int,
) -> Iterator[tuple[pa.RecordBatch | None, object]]:
    """``(batch, result)`` for every batch, in order, where ``result()`` gives
    ``prepare(batch, rows before it)``: computed there on one thread, else by ``threads``
    workers running ahead of the consumer (the rule's kernels release the GIL). A read error
    comes as ``(None, error)`` where its batch would have been, after the batches before it."""
    import collections
    import functools

    pool = ThreadPoolExecutor(threads, thread_name_prefix="clean-rule") if threads > 1 else None
    ahead = threads if pool is not None else 0  # batches prepared beyond the consumer's
    pending: collections.deque = collections.deque()
    before = 0
    try:
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except (OSError, ValueError, RuntimeError) as error:
                pending.append((None, error))
                break
            if pool is None:
                pending.append((batch, functools.partial(prepare, batch, before)))
            else:
                pending.append((batch, pool.submit(prepare, batch, before).result))
            before += batch.num_rows
            while len(pending) > ahead:
                yield pending.popleft()
        while pending:
            yield pending.popleft()
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _read_ahead(batches: Iterator[pa.RecordBatch], depth: int = 1) -> Iterator[pa.RecordBatch]:
    """``batches`` read by a helper thread ``depth`` batch ahead, so that decoding
    the next batch overlaps cleaning this one (a part read alone still keeps two cores busy);
    a read error is raised where the batch would have been."""
    import queue

    slots: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def produce() -> None:
        try:
            for batch in batches:
                while not stop.is_set():
                    try:
                        slots.put(batch, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            slots.put(done)
        except BaseException as error:  # handed to the consumer, raised there
            slots.put(error)

    reader = threading.Thread(target=produce, name="clean-read", daemon=True)
    reader.start()
    try:
        while True:
            item = slots.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while reader.is_alive():  # unblock a producer waiting on a full queue
            with contextlib.suppress(queue.Empty):
                slots.get(timeout=0.1)
        reader.join()


def _record_batch(
    spec: SourceSpec,
    part: str,
    read: int,
    cleaned: CleanedBatch,
    suspects: list[int],
    unit: OutputUnit,
    report: CleaningReport,
    rechecks: list[tuple[SkipExample, tuple]] | None = None,
) -> None:
    """Count the batch's skipped records, check its ``suspects`` as ``check_row`` does
    (counting the rejected ones), and hand the other rows to ``unit``. ``read``: the part's
    records before this batch; ``rechecks``: see :func:`_clean_part`."""
    import numpy as np

    for skip in cleaned.skips:
        if not len(skip.rows):
            continue
        entry = report.skipped.setdefault(skip.reason, SkipCount())
        entry.count += len(skip.rows)
        entry.rows += len(skip.rows) * (spec.rows_per_record if skip.whole_record else 1)
        for row in skip.rows[: max(0, MAX_SKIP_EXAMPLES - len(entry.examples))]:
            row = int(row)
            locator = f"{part}#{read + row + 1}"
            entry.examples.append(SkipExample(skip.output(row), None, locator, skip.detail(row)))
    rows, sources = cleaned.rows, cleaned.records
    if not rows.num_rows:
        return
    files, codes = _file_codes(spec, cleaned, unit.routes)
    file_reports = [report.file(relative) for relative in files]
    if suspects:
        keep = np.ones(rows.num_rows, dtype=bool)
        for position in suspects:  # ascending: read order
            code = codes[position]
            number = file_reports[code].candidates + 1
            number += int(np.count_nonzero(codes[:position] == code))
            values = tuple(rows.column(name)[position].as_py() for name in FIELDS)
            _, problem = check_row(values, files[code], number)
            if problem is not None:
                keep[position] = False
                reason, message = problem
                locator = f"{part}#{read + int(sources[position]) + 1}"
                example = SkipExample(files[code], number, locator, message)
                report.skip(reason, example)
                if rechecks is not None and report.skipped[reason].examples[-1] is example:
                    rechecks.append((example, values))
        counts = np.bincount(codes, minlength=len(files))
        rows, codes = rows.filter(boolean_array(keep)), codes[keep]
    else:
        counts = np.bincount(codes, minlength=len(files))
    for file_report, count in zip(file_reports, counts, strict=True):
        file_report.candidates += int(count)
    if rows.num_rows:
        unit.add(files, codes, rows, file_reports)


def _file_codes(
    spec: SourceSpec, cleaned: CleanedBatch, routes: dict[str, str]
) -> tuple[list[str], np.ndarray]:
    """The batch's output files (checked routes, each once) and each row's index into them.
    ``routes``: the routes checked by earlier batches (FLAN: the same hundreds of task files
    in every batch; checking one parses a path)."""
    import numpy as np

    rows = cleaned.rows
    if spec.outputs_by_condition:
        conditions = rows.column("condition").combine_chunks().dictionary_encode()
        names = [
            spec.output_of_row((value, "", ""), "") for value in conditions.dictionary.to_pylist()
        ]
        codes = integers(conditions.indices)
    elif cleaned.output is not None:
        names, codes = [cleaned.output], np.zeros(rows.num_rows, dtype=np.int64)
    else:
        names, codes = cleaned.route_names, cleaned.route_codes
    # Two values may share a file (two FLAN tasks with one safe name): one code per file.
    index: dict[str, int] = {}
    remap = np.array([index.setdefault(name, len(index)) for name in names], dtype=np.int64)
    if spec.route:
        for name in index:
            if name not in routes:
                routes[name] = spec.checked_route(name)
        files = [routes[name] for name in index]
    else:
        files = list(index)
    return files, remap[np.asarray(codes, dtype=np.int64)]


def _suspect_rows(rows: pa.Table) -> list[int]:
    """Positions of rows ``check_row`` may reject: a null field or an unknown condition tag."""
    import numpy as np
    import pyarrow.compute as pc

    mask = np.zeros(rows.num_rows, dtype=bool)
    for name in FIELDS:
        mask |= null_flags(rows.column(name))
    conditions = rows.column("condition")
    for value in pc.unique(conditions).to_pylist():
        if value is not None and unknown_tags(value):
            mask |= true_flags(pc.equal(conditions, string_scalar(value)))
    return [int(position) for position in np.flatnonzero(mask)]


def _check_utf8(rows: pa.Table, raw_path: Path, read: int, sources: np.ndarray) -> None:
    """ValueError naming the raw file, its row (``read``: rows of the file before this batch)
    and the field of text that is not valid UTF-8 (a raw string column may hold any bytes)."""
    import pyarrow as pa

    for name in FIELDS:
        start = 0
        for chunk in rows.column(name).chunks:
            try:
                chunk.validate(full=True)
            except pa.ArrowInvalid:
                for offset, value in enumerate(chunk.cast(pa.binary()).to_pylist()):
                    try:
                        if value is not None:
                            value.decode("utf-8")
                    except UnicodeDecodeError as error:
                        row = read + int(sources[start + offset]) + 1
                        raise ValueError(
                            f"{raw_path}: row {row}, field {name!r}: text is not valid "
                            f"UTF-8 ({error})"
                        ) from None
                raise
            start += len(chunk)


__all__ = ["COLUMNAR_BATCH_ROWS", "clean_parts_columnar", "columnar_parts", "default_threads"]
