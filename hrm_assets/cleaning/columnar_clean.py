"""The columnar cleaning engine: raw record batches -> a source's :class:`ColumnarRule` ->
validated columns -> the cleaned writers, part by part, parts in parallel.

Used by :func:`hrm_assets.cleaning.clean.clean_source` for a local-file source that has a
``columnar`` rule; the rows, files, bytes and report are those of the row path:

- every raw record batch (``COLUMNAR_BATCH_ROWS`` rows, so a large raw row group is read in
  slices) goes through the rule; the rows it gives are checked as ``check_row`` checks them
  (null fields, unknown condition tags, text that is not UTF-8), only the rows that fail being
  turned into Python objects;
- rows are grouped by output file with a stable sort (read order kept within each file) and
  handed to each file's writer as Arrow columns;
- skipped records are counted by reason, with the first examples in read order;
- parts are cleaned in parallel threads (pyarrow releases the GIL in its kernels, readers and
  writers) when the rule says no two parts write the same file; each part has its own report,
  merged in part order, and its own share of the writers' buffer budget, so files and report
  do not depend on the number of threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from hrm_assets.cleaning.cleaned_parquet import DEFAULT_BUFFER_BYTES, BufferBudget
from hrm_assets.cleaning.columnar import COLUMNAR_BATCH_ROWS, CleanedBatch, NotColumnar
from hrm_assets.cleaning.rows import FIELDS, Row, unknown_tags

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from hrm_assets.cleaning.clean import CleanedOutputs, CleaningReport
    from hrm_assets.cleaning.sources.spec import SourceSpec

Progress = Callable[[int], None] | None


def default_threads() -> int:
    """Threads for cleaning parts in parallel: every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def columnar_parts(spec: SourceSpec, raw_root: Path | None) -> list[tuple[str, list[Path]]] | None:
    """``(part, files)`` of a source the columnar engine can clean, else None (no rule, the
    Hub, or a raw file whose column types the rule leaves to the row path). A file whose
    schema cannot be read gives None too: the row path reports it as it always has."""
    from hrm_assets.cleaning.sources.local_files import LocalLayout

    rule = spec.columnar
    if rule is None or raw_root is None or not isinstance(spec.layout, LocalLayout):
        return None
    try:
        root = spec.layout.root(spec, raw_root)
        found = spec.layout.part_files(spec, root)
        if not found:
            return None
        for _, files in found:
            for path in files:
                rule.check_schema(_schema(path))
    except (NotColumnar, OSError, ValueError):
        return None
    return found


def _schema(path: Path) -> pa.Schema:
    import pyarrow.parquet as pq

    return pq.read_schema(path)


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
    if not spec.columnar.parts_disjoint:
        threads = 1
    workers = min(threads, len(parts)) or 1
    budget_share = max(1, DEFAULT_BUFFER_BYTES // workers)

    def one(item: tuple[str, list[Path]]) -> CleaningReport:
        part, files = item
        return _clean_part(
            spec,
            part,
            files,
            outputs,
            BufferBudget(budget_share),
            read_error,
            progress,
            progress_bytes,
        )

    if workers == 1:
        for item in parts:
            report.merge(one(item))
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="clean") as pool:
        for part_report in pool.map(one, parts):
            report.merge(part_report)


def _clean_part(
    spec: SourceSpec,
    part: str,
    files: Sequence[Path],
    outputs: CleanedOutputs,
    budget: BufferBudget,
    read_error: Callable[[str, CleaningReport, Exception], Exception],
    progress: Progress,
    progress_bytes: Progress,
) -> CleaningReport:
    from hrm_assets.cleaning.clean import CleaningReport

    rule = spec.columnar
    report = CleaningReport(spec.name)
    report.parts.append(part)
    if spec.one_output_per_part:
        outputs.writer(spec.part_output(part), budget)
        report.file(spec.part_output(part))
    read = 0  # records of the part before the current batch (for the examples' locators)
    for path in files:
        file_read = 0
        size = path.stat().st_size
        rows_in_file = rule.count_rows(path) if progress_bytes is not None else 0
        batches = rule.read(path, rule.columns)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except (OSError, ValueError, RuntimeError) as error:
                raise read_error(part, report, error) from error
            cleaned = rule.clean(batch, part)
            _record_batch(spec, part, (path, file_read), read, cleaned, outputs, budget, report)
            read += batch.num_rows
            file_read += batch.num_rows
            report.records_read += batch.num_rows
            report.raw_bytes += size * batch.num_rows // max(1, rows_in_file or batch.num_rows)
            if progress is not None:
                progress(batch.num_rows)
            if progress_bytes is not None:
                progress_bytes(size * batch.num_rows // max(1, rows_in_file))
    return report


def _record_batch(
    spec: SourceSpec,
    part: str,
    raw: tuple[Path, int],
    read: int,
    cleaned: CleanedBatch,
    outputs: CleanedOutputs,
    budget: BufferBudget,
    report: CleaningReport,
) -> None:
    """Count the batch's skipped records, then check and write its rows, file by file.
    ``raw``: the raw file and its rows before this batch; ``read``: the part's."""
    from hrm_assets.cleaning.clean import MAX_SKIP_EXAMPLES, SkipCount, SkipExample

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
    problems: list[tuple[int, str, object]] = []
    for relative, rows, sources in _groups(spec, cleaned):
        _write_group(
            spec, raw, relative, rows, sources, read, part, outputs, budget, report, problems
        )
    # Rows that fail the checks, counted in read order whatever their files.
    for _, reason, example in sorted(problems, key=lambda item: item[0]):
        report.skip(reason, example)


def _groups(spec: SourceSpec, cleaned: CleanedBatch):
    """``(relative output, rows, raw record indices)`` per output file of the batch, files in
    order of their first row, rows in read order."""
    import numpy as np
    import pyarrow as pa

    rows, sources = cleaned.rows, cleaned.records
    if not rows.num_rows:
        return
    if spec.outputs_by_condition:
        conditions = rows.column("condition").combine_chunks().dictionary_encode()
        names = [
            spec.output_of_row((value, "", ""), "") for value in conditions.dictionary.to_pylist()
        ]
        codes = conditions.indices.to_numpy(zero_copy_only=False)
    elif cleaned.output is not None:
        yield spec.checked_route(cleaned.output) if spec.route else cleaned.output, rows, sources
        return
    else:
        names, codes = cleaned.route_names, cleaned.route_codes
    # Two values may share a file (two FLAN tasks with one safe name): one code per file.
    index: dict[str, int] = {}
    remap = np.array([index.setdefault(name, len(index)) for name in names], dtype=np.int64)
    codes = remap[np.asarray(codes, dtype=np.int64)]
    files = list(index)
    if len(files) == 1:
        yield spec.checked_route(files[0]) if spec.route else files[0], rows, sources
        return
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=len(files))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    _, first = np.unique(codes, return_index=True)
    present = np.unique(codes)
    grouped = rows.take(pa.array(order))
    grouped_sources = sources[order]
    for code in present[np.argsort(first, kind="stable")]:
        start, count = int(starts[code]), int(counts[code])
        relative = files[code]
        if spec.route:
            relative = spec.checked_route(relative)
        yield (
            relative,
            grouped.slice(start, count),
            grouped_sources[start : start + count],
        )


def _write_group(
    spec: SourceSpec,
    raw: tuple[Path, int],
    relative: str,
    rows: pa.Table,
    sources: np.ndarray,
    read: int,
    part: str,
    outputs: CleanedOutputs,
    budget: BufferBudget,
    report: CleaningReport,
    problems: list,
) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    from hrm_assets.cleaning.clean import SkipExample, check_row

    file_report = report.file(relative)
    first_number = file_report.candidates + 1
    file_report.candidates += rows.num_rows
    _check_utf8(rows, *raw, sources)
    bad = _suspect_rows(rows)
    if bad:
        keep = [True] * rows.num_rows
        for position in bad:
            values = tuple(rows.column(name)[position].as_py() for name in FIELDS)
            _, problem = check_row(values, relative, first_number + position)
            if problem is None:
                continue
            keep[position] = False
            reason, message = problem
            record = int(sources[position])
            example = SkipExample(
                relative, first_number + position, f"{part}#{read + record + 1}", message
            )
            problems.append((record, reason, example))
        rows = rows.filter(pa.array(keep))
    writer = outputs.writer(relative, budget)
    if not rows.num_rows:
        return
    if spec.format == "parquet":
        writer.write_batch(rows)
    else:
        for values in zip(*(rows.column(name).to_pylist() for name in FIELDS), strict=True):
            writer.write(Row(*values))
    file_report.rows += rows.num_rows
    counts = pc.value_counts(rows.column("condition").combine_chunks())
    for item in counts.to_pylist():
        file_report.conditions[item["values"]] += item["counts"]
    _preview(file_report, rows)


def _suspect_rows(rows: pa.Table) -> list[int]:
    """Positions of rows ``check_row`` may reject: a null field or an unknown condition tag."""
    import numpy as np
    import pyarrow.compute as pc

    mask = np.zeros(rows.num_rows, dtype=bool)
    for name in FIELDS:
        column = rows.column(name)
        if column.null_count:
            mask |= column.is_null().to_numpy(zero_copy_only=False)
    conditions = rows.column("condition")
    for value in pc.unique(conditions).to_pylist():
        if value is not None and unknown_tags(value):
            mask |= pc.fill_null(pc.equal(conditions, value), False).to_numpy(zero_copy_only=False)
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


def _preview(file_report, rows: pa.Table) -> None:
    from hrm_assets.cleaning.clean import PREVIEW_CHARS, PREVIEW_ROWS

    missing = PREVIEW_ROWS - len(file_report.preview)
    if missing <= 0:
        return
    head = rows.slice(0, missing)
    columns = [head.column(name).to_pylist() for name in FIELDS]
    for values in zip(*columns, strict=True):
        file_report.preview.append(Row(*(value[:PREVIEW_CHARS] for value in values)))


__all__ = ["COLUMNAR_BATCH_ROWS", "clean_parts_columnar", "columnar_parts", "default_threads"]
