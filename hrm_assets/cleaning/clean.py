"""Cleaning: raw records -> validated rows -> cleaned JSONL/Parquet files, streamed in batches.

``clean_source(spec, out_root)`` reads a source part by part and batch by batch (see
``hrm_assets.cleaning.sources``), turns each raw record into rows with the source's pure cleaning
function, validates every row, and hands it to a streaming writer. Files have data_io's bytes:
JSONL lines as orjson writes them, keys in the order of the source's data_io script
(``SourceSpec.columns``), and Parquet files as data_io's one-call pyarrow write gives them
(``hrm_assets.cleaning.cleaned_parquet``). Memory holds one raw batch, the rows of one record, a
bounded report and, over all Parquet outputs together, about ``DEFAULT_BUFFER_BYTES`` (of
``cleaned_parquet``) of rows waiting for their row group (the largest buffers spill to disk
beyond that), whatever the size of the source. Every output is written to a temporary sibling
and renamed into place when the whole source succeeded (one ``AtomicGroup`` of
``hrm_assets.common.atomic``), so a failure keeps the previous files.

A source with a columnar rule (``SourceSpec.columnar``: FLAN, SYNTH, OpenMathInstruct-2,
tasksource, dmmath, GSM8K) read from local files in a format the rule reads is cleaned by the
columnar engine instead (``hrm_assets.cleaning.columnar_clean``): Arrow record batches, parts
on parallel threads, the same files and report as this row path.

Nothing is dropped silently: a record the source rules reject (``SkipRecord``), a row they
leave out (``SkippedRow``, a declared source's filters), a record that breaks the cleaning
function, and a row that is not three valid strings with known condition tags are counted
in the :class:`CleaningReport` under a reason, with a few examples naming the file, the row and
the raw record.

The CLI is :mod:`hrm_assets.cleaning.cli`.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hrm_assets.cleaning.checks import check_row
from hrm_assets.cleaning.cleaned_parquet import ParquetRowWriter
from hrm_assets.cleaning.columnar_clean import (
    clean_parts_columnar,
    columnar_parts,
    default_threads,
)
from hrm_assets.cleaning.leftovers import cleaning_leftovers, cleaning_lock_path
from hrm_assets.cleaning.outputs import CleanedOutputs
from hrm_assets.cleaning.progress import ProgressLog  # noqa: F401 - the asset's import
from hrm_assets.cleaning.raw_damage import first_unreadable
from hrm_assets.cleaning.report import CleaningReport, SkipExample
from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources import SkippedRow, SkipRecord, SourceSpec
from hrm_assets.common.atomic import exclusive_lock
from hrm_assets.common.hashing import file_sha256, value_sha256
from hrm_assets.contracts.framing import split_condition

DEFAULT_BATCH_SIZE = 8192


# -- code version ------------------------------------------------------------------------------


def source_code_version(spec: SourceSpec) -> str:
    """Hash of the code that decides a source's cleaned bytes: its family module, the modules
    of its raw layout's classes, and the shared cleaning, row and tag rules. A data version
    built on it changes when any of them is edited, and only then."""
    layout_classes = type(spec.layout).__mro__
    layout_modules = {cls.__module__ for cls in layout_classes if cls.__module__.startswith("hrm_")}
    modules = {
        spec.clean.__module__,
        *layout_modules,
        __name__,
        ParquetRowWriter.__module__,
        Row.__module__,
        split_condition.__module__,
    }
    modules |= {check_row.__module__, CleanedOutputs.__module__}  # row checks, the writers
    if spec.columnar is not None:  # the engine that cleans it, and its rule's kernels
        modules |= {"hrm_assets.cleaning.columnar", "hrm_assets.cleaning.columnar_clean"}
        modules |= {"hrm_assets.cleaning.columnar_outputs", spec.columnar.clean.__module__}
    for name in modules:
        importlib.import_module(name)
    files = sorted(Path(sys.modules[name].__file__).resolve() for name in modules)
    # The name is part of it: sources of one family module share files but not their rules.
    identity = [spec.name, [[path.name, file_sha256(path)] for path in files]]
    if spec.rules_version:  # rules kept outside the code (sources.yaml); code sources have none
        identity.append(spec.rules_version)
    return value_sha256(identity)


# -- the cleaning run --------------------------------------------------------------------------


# Errors a cleaning function raises on a malformed record (a missing key, a null where data_io
# expects a string, ...). data_io crashes on them; we count the record as skipped.
_RECORD_ERRORS = (KeyError, TypeError, AttributeError, ValueError, IndexError)


def clean_source(
    spec: SourceSpec,
    out_root: Path,
    raw_root: Path | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int], None] | None = None,
    progress_bytes: Callable[[int], None] | None = None,
    threads: int | None = None,
) -> CleaningReport:
    """Clean one source into ``out_root`` (the cleaned root) and report what happened.

    ``raw_root=None`` loads from the Hugging Face Hub; otherwise from a local mirror (see
    ``hrm_assets.cleaning.sources.hub``). ``progress(n)`` is called after each raw batch with the
    number of records it held, ``progress_bytes(n)`` with the raw bytes it stood for (columnar
    sources). ``threads`` (default: every core) clean a columnar source's parts in parallel;
    the files and the report are the same for any number. Raises on read or write errors,
    leaving earlier outputs as they were; bad records and rows are counted in the report
    instead.
    """
    threads = default_threads() if threads is None else max(1, threads)
    started = time.monotonic()
    report = CleaningReport(spec.name)
    # One cleaning run of a source at a time; whoever holds the lock knows that temporaries
    # of the source's outputs belong to runs that died.
    with exclusive_lock(cleaning_lock_path(out_root, spec)):
        for leftover in cleaning_leftovers(spec, out_root):
            leftover.unlink(missing_ok=True)
            report.swept.append(leftover.relative_to(out_root).as_posix())
        _clean_into(
            spec, Path(out_root), raw_root, batch_size, progress, report, progress_bytes, threads
        )
    report.seconds = time.monotonic() - started
    return report


def _clean_into(
    spec: SourceSpec,
    out_root: Path,
    raw_root: Path | None,
    batch_size: int,
    progress: Callable[[int], None] | None,
    report: CleaningReport,
    progress_bytes: Callable[[int], None] | None = None,
    threads: int = 1,
) -> None:
    columnar = columnar_parts(spec, raw_root)
    with CleanedOutputs(out_root, spec.format, spec.columns, threads) as outputs:
        for relative in spec.static_outputs:
            outputs.writer(relative)
            report.file(relative)
        if columnar is not None:
            report.engine = "columnar"
            report.threads = threads

            def read_error(part: str, part_report: CleaningReport, error: Exception):
                return _raw_read_error(spec, part, raw_root, part_report, error)

            clean_parts_columnar(
                spec, columnar, outputs, report, read_error, progress, progress_bytes, threads
            )
        for part in () if columnar is not None else _raw_parts(spec, raw_root, batch_size):
            report.parts.append(part.name)
            if spec.one_output_per_part:
                outputs.writer(spec.part_output(part.name))
                report.file(spec.part_output(part.name))
            index = 0
            for batch in _read_batches(spec, part, raw_root, report):
                for record in batch:
                    index += 1
                    _clean_record(spec, record, part.name, f"{part.name}#{index}", outputs, report)
                report.records_read += len(batch)
                if progress is not None:
                    progress(len(batch))
    for relative in list(report.files):
        if outputs.has_file(relative):
            report.files[relative].bytes = (Path(out_root) / relative).stat().st_size
        else:  # a routed output whose rows were all skipped: no file, as data_io writes none
            del report.files[relative]


class RawReadError(ValueError):
    """A raw file could not be read; the message names the source, the part and its files."""


def _damaged_raw_file(spec: SourceSpec, raw_root: Path | None) -> tuple[Path, str] | None:
    """The first local raw file of ``spec`` that cannot be read through, with why."""
    if raw_root is None:
        return None
    try:
        return first_unreadable(spec.layout.raw_files(spec, raw_root))
    except (OSError, ValueError):  # the files cannot even be listed: the original error says why
        return None


def _raw_read_error(
    spec: SourceSpec, part: str, raw_root: Path | None, report: CleaningReport, error
) -> RawReadError:
    """The error for a failed raw read: naming the damaged file when one of the source's
    local raw files cannot be read through, else the part and where it was read."""
    damaged = _damaged_raw_file(spec, raw_root)
    if damaged is not None:
        path, detail = damaged
        return RawReadError(
            f"{spec.name}: cannot read raw file {path} (raw part {part!r}): {detail}"
        )
    if raw_root is None:
        where = f"{spec.hub_id} on the Hub"
    else:
        where = f"{spec.layout.describe(spec)} under {raw_root}"
    return RawReadError(
        f"{spec.name}: cannot read raw part {part!r} ({where}) after {report.records_read} "
        f"records of the source: {type(error).__name__}: {error}"
    )


def _named_read_errors(items, replacement_for):
    """``items``, a read failure (``OSError``, ``ValueError``, ``RuntimeError``) replaced by
    ``replacement_for(error)``, or raised as it is when that gives None."""
    iterator = iter(items)
    while True:
        try:
            item = next(iterator)
        except StopIteration:
            return
        except (OSError, ValueError, RuntimeError) as error:
            replacement = replacement_for(error)
            if replacement is None:
                raise
            raise replacement from error
        yield item


def _raw_parts(spec: SourceSpec, raw_root: Path | None, batch_size: int):
    """``spec.layout.parts``; a failure to open a part (``datasets`` reads a Parquet file's
    schema up front) names the damaged file when there is one, else is raised as it is (a
    missing folder, a bad split list: the layout's own message)."""

    def damaged_file_error(_error: Exception) -> RawReadError | None:
        damaged = _damaged_raw_file(spec, raw_root)
        if damaged is None:
            return None
        path, detail = damaged
        return RawReadError(f"{spec.name}: cannot read raw file {path}: {detail}")

    return _named_read_errors(spec.layout.parts(spec, raw_root, batch_size), damaged_file_error)


def _read_batches(spec: SourceSpec, part, raw_root: Path | None, report: CleaningReport):
    """``part.batches``, with a read failure turned into an error saying where it happened."""
    return _named_read_errors(
        part.batches, lambda error: _raw_read_error(spec, part.name, raw_root, report, error)
    )


def _clean_record(
    spec: SourceSpec,
    record: Mapping[str, Any],
    part: str,
    locator: str,
    outputs: CleanedOutputs,
    report: CleaningReport,
) -> None:
    try:
        relative = spec.output_of(record, part)
        rows = list(spec.clean(record, part))
    except SkipRecord as skip:
        example = SkipExample(_output_name(spec, record, part), None, locator, skip.detail)
        report.skip(skip.reason, example, spec.rows_per_record)
        return
    except _RECORD_ERRORS as error:
        reason = f"malformed raw record ({type(error).__name__})"
        detail = f"{type(error).__name__}: {error}"
        example = SkipExample(_output_name(spec, record, part), None, locator, detail)
        report.skip(reason, example, spec.rows_per_record)
        return
    for produced in rows:
        if isinstance(produced, SkippedRow):
            report.skip(produced.reason, SkipExample(relative, None, locator, produced.detail))
            continue
        file_report = report.file(spec.output_of_row(produced, relative))
        file_report.candidates += 1
        row, problem = check_row(produced, file_report.path, file_report.candidates)
        if problem is not None:
            reason, message = problem
            report.skip(
                reason, SkipExample(file_report.path, file_report.candidates, locator, message)
            )
            continue
        outputs.writer(file_report.path).write(row)
        file_report.add(row)


def _output_name(spec: SourceSpec, record: Mapping[str, Any], part: str) -> str:
    try:
        return spec.output_of(record, part)
    except Exception:  # the route itself failed on this record: name the source's prefix
        return spec.output
