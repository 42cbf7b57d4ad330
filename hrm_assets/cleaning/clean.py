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

A local-file source with a columnar rule (``SourceSpec.columnar``: FLAN, SYNTH) is cleaned by
the columnar engine instead (``hrm_assets.cleaning.columnar_clean``): Arrow record batches, parts
on parallel threads, the same files and report as this row path.

Nothing is dropped silently: a record the source rules reject (``SkipRecord``), a row they
leave out (``SkippedRow``, a declared source's filters), a record that breaks the cleaning
function, and a row that is not three valid strings with known condition tags are counted
in the :class:`CleaningReport` under a reason, with a few examples naming the file, the row and
the raw record.

CLI: ``python -m hrm_assets.cleaning SOURCE... [--raw-root DIR] [--out DIR] [--threads N]
[--json]``: a progress bar (rows/s, raw MB/s), a short summary per source, every file's detail
with ``--json``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import json
import resource
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hrm_assets.cleaning.cleaned_parquet import BufferBudget, ParquetRowWriter
from hrm_assets.cleaning.leftovers import cleaning_leftovers, cleaning_lock_path
from hrm_assets.cleaning.raw_damage import first_unreadable
from hrm_assets.cleaning.rows import FIELDS, Row, RowError, unknown_tags, validate_row
from hrm_assets.cleaning.sources import SOURCES, SkippedRow, SkipRecord, SourceSpec, get_source
from hrm_assets.common import settings
from hrm_assets.common.atomic import AtomicGroup, atomic_file, exclusive_lock
from hrm_assets.common.hashing import file_sha256, value_sha256
from hrm_assets.common.object_mirror import mirror_tree
from hrm_assets.common.storage import ObjectRoot
from hrm_assets.contracts.framing import split_condition

DEFAULT_BATCH_SIZE = 8192
MAX_SKIP_EXAMPLES = 5
PREVIEW_ROWS = 5
PREVIEW_CHARS = 500

# Reasons of the generic checks (a source's own reasons come from its SkipRecord).
UNKNOWN_TAG = "unknown condition tag"
NOT_A_STRING = "field missing or not a string"
NOT_UTF8 = "text is not valid UTF-8"
NOT_A_ROW = "cleaning function yielded a non-row"
NO_TAG = "(none)"

_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def jsonl_line(row: Row, columns: Sequence[str] = FIELDS) -> bytes:
    """One JSONL line exactly as data_io writes it (``orjson.dumps(row) + b"\\n"``), keys in
    ``columns`` order (the order of the source's data_io dict).

    The stdlib encoder with compact separators and no ASCII escaping is byte-identical to
    orjson for every valid string; text that is not valid UTF-8 is rejected before this.
    """
    return (_JSON.encode({name: row[FIELDS.index(name)] for name in columns}) + "\n").encode()


# -- writers -----------------------------------------------------------------------------------


class JsonlWriter:
    """Streams rows to ``path`` as JSONL with keys in ``columns`` order; the file appears only
    when the writer exits cleanly."""

    def __init__(
        self, path: Path, columns: Sequence[str] = FIELDS, group: AtomicGroup | None = None
    ):
        if sorted(columns) != sorted(FIELDS):
            raise ValueError(f"columns {list(columns)} must be {list(FIELDS)} in some order")
        self.path = Path(path)
        self.columns = tuple(columns)
        self.rows = 0
        self._stack = contextlib.ExitStack()
        self._handle = None
        self._group = group

    def __enter__(self) -> JsonlWriter:
        if self._group is None:
            self._handle = self._stack.enter_context(atomic_file(self.path, "wb"))
        else:  # renamed into place with the run's other outputs
            self._handle = self._group.open(self.path)
            self._stack.callback(self._handle.close)
        return self

    def write(self, row: Row) -> None:
        self._handle.write(jsonl_line(row, self.columns))
        self.rows += 1

    def write_batch(self, rows, text_bytes: int | None = None) -> None:
        """Append rows given as Arrow columns named after the row fields, in order."""
        columns = [rows.column(name).to_pylist() for name in FIELDS]
        for values in zip(*columns, strict=True):
            self.write(Row(*values))

    def __exit__(self, *exc_info) -> bool:
        return self._stack.__exit__(*exc_info)


def open_writer(
    path: Path,
    fmt: str,
    columns: Sequence[str] = FIELDS,
    budget: BufferBudget | None = None,
    group: AtomicGroup | None = None,
):
    """A streaming writer for a cleaned file of format ``jsonl`` or ``parquet`` with its fields
    in ``columns`` order; Parquet writers that share ``budget`` bound their memory together;
    with ``group``, the file is renamed into place when the group commits."""
    if fmt == "jsonl":
        return JsonlWriter(path, columns, group)
    if fmt == "parquet":
        return ParquetRowWriter(path, columns, budget, group=group)
    raise ValueError(f"unknown cleaned format {fmt!r} (expected jsonl or parquet)")


# -- validation --------------------------------------------------------------------------------


RowCheck = tuple[Row, None] | tuple[None, tuple[str, str]]


def check_row(row: object, file: str, row_number: int) -> RowCheck:
    """Validate one produced row against docs/CONTRACTS.md section 1.

    Returns ``(row, None)`` for a good row, else ``(None, (reason, message))`` where the
    message names the file, the row number and the problem (for a tag: the unknown tag and the
    known ones). Rows may be :class:`Row` tuples or mappings with the three fields.
    """
    if isinstance(row, tuple) and len(row) == len(FIELDS):
        obj: object = dict(zip(FIELDS, row, strict=True))
    elif isinstance(row, Mapping):
        obj = row
    else:
        return None, (NOT_A_ROW, f"{file}: row {row_number}: got {type(row).__name__}")
    try:
        good = validate_row(obj, file, row_number)
    except RowError as error:
        if error.field == "condition" and isinstance(obj.get("condition"), str):
            if unknown_tags(obj["condition"]):
                return None, (UNKNOWN_TAG, str(error))
        return None, (NOT_A_STRING, str(error))
    for name, value in zip(FIELDS, good, strict=True):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                return None, (NOT_UTF8, str(RowError(file, row_number, name, str(exc))))
    return good, None


# -- report ------------------------------------------------------------------------------------


@dataclass
class SkipExample:
    file: str
    row: int | None
    raw: str
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "row": self.row, "raw": self.raw, "detail": self.detail}


@dataclass
class SkipCount:
    count: int = 0  # skipped records and rows, each once
    rows: int = 0  # rows lost: a record skipped whole counts the rows it would have given
    examples: list[SkipExample] = field(default_factory=list)


@dataclass
class FileReport:
    """One cleaned output file: rows written, size, condition histogram, first rows."""

    path: str
    rows: int = 0
    bytes: int = 0
    conditions: Counter = field(default_factory=Counter)
    preview: list[Row] = field(default_factory=list)
    candidates: int = 0  # rows produced for this file, written or skipped (for row numbers)

    def add(self, row: Row) -> None:
        self.rows += 1
        self.conditions[row.condition] += 1
        if len(self.preview) < PREVIEW_ROWS:
            self.preview.append(Row(*(value[:PREVIEW_CHARS] for value in row)))


@dataclass
class CleaningReport:
    """What one cleaning run did; plain data, turned into Dagster metadata by ``defs/``.

    - ``files``: relative output path -> :class:`FileReport` (rows, bytes, conditions,
      preview of the first rows, strings cut at ``PREVIEW_CHARS``).
    - ``skipped``: reason -> :class:`SkipCount` (count and up to ``MAX_SKIP_EXAMPLES``
      examples naming the file, the row number (the row's position among all rows produced
      for that file, so skipped rows have numbers too; None for a skipped raw record), the raw
      record as ``<part>#<n>`` (1-based within its part) and what was wrong).
    - ``records_read``, ``parts`` (in read order), ``seconds``.
    """

    source: str
    files: dict[str, FileReport] = field(default_factory=dict)
    skipped: dict[str, SkipCount] = field(default_factory=dict)
    records_read: int = 0
    parts: list[str] = field(default_factory=list)
    seconds: float = 0.0
    swept: list[str] = field(default_factory=list)  # killed runs' temporaries, removed
    raw_bytes: int = 0  # raw file bytes read through (columnar engine; 0 on the row path)
    engine: str = "rows"  # "columnar" when the source's columnar rule cleaned it
    threads: int = 1

    def file(self, path: str) -> FileReport:
        if path not in self.files:
            self.files[path] = FileReport(path)
        return self.files[path]

    def skip(self, reason: str, example: SkipExample, rows: int = 1) -> None:
        entry = self.skipped.setdefault(reason, SkipCount())
        entry.count += 1
        entry.rows += rows
        if len(entry.examples) < MAX_SKIP_EXAMPLES:
            entry.examples.append(example)

    def merge(self, other: CleaningReport) -> None:
        """Add ``other`` (a later part's report) to this one, as if cleaned after it."""
        for path, item in other.files.items():
            mine = self.file(path)
            mine.rows += item.rows
            mine.bytes += item.bytes
            mine.conditions.update(item.conditions)
            mine.candidates += item.candidates
            mine.preview.extend(item.preview[: PREVIEW_ROWS - len(mine.preview)])
        for reason, entry in other.skipped.items():
            mine = self.skipped.setdefault(reason, SkipCount())
            mine.count += entry.count
            mine.rows += entry.rows
            mine.examples.extend(entry.examples[: MAX_SKIP_EXAMPLES - len(mine.examples)])
        self.records_read += other.records_read
        self.raw_bytes += other.raw_bytes
        self.parts.extend(other.parts)

    @property
    def rows_written(self) -> int:
        return sum(item.rows for item in self.files.values())

    @property
    def rows_skipped(self) -> int:
        """Rows lost: a skipped row counts 1, a record skipped whole the rows it would have
        given (``SourceSpec.rows_per_record``)."""
        return sum(item.rows for item in self.skipped.values())

    @property
    def bytes_written(self) -> int:
        return sum(item.bytes for item in self.files.values())

    @property
    def condition_counts(self) -> Counter:
        """Rows per condition string over all files (``""`` is the empty condition)."""
        total: Counter = Counter()
        for item in self.files.values():
            total.update(item.conditions)
        return total

    @property
    def tag_counts(self) -> Counter:
        """Rows carrying each tag; rows with the empty condition count under ``(none)``."""
        tags: Counter = Counter()
        for condition, count in self.condition_counts.items():
            for tag in split_condition(condition) or [NO_TAG]:
                tags[tag] += count
        return tags

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (for metadata, logs and the CLI's ``--json``)."""
        return {
            "source": self.source,
            "records_read": self.records_read,
            "rows_written": self.rows_written,
            "rows_skipped": self.rows_skipped,
            "bytes_written": self.bytes_written,
            "seconds": round(self.seconds, 3),
            "parts": list(self.parts),
            "files": {
                path: {
                    "rows": item.rows,
                    "bytes": item.bytes,
                    "conditions": dict(sorted(item.conditions.items())),
                    "preview": [row._asdict() for row in item.preview],
                }
                for path, item in sorted(self.files.items())
            },
            "conditions": dict(sorted(self.condition_counts.items())),
            "tags": dict(sorted(self.tag_counts.items())),
            "skipped": {
                reason: {
                    "count": entry.count,
                    "rows": entry.rows,
                    "examples": [e.as_dict() for e in entry.examples],
                }
                for reason, entry in sorted(self.skipped.items())
            },
        }

    def speed(self) -> dict[str, Any]:
        """How fast the run went: seconds, records/s, raw MB/s (raw bytes read through, for
        the columnar engine), the engine and its threads. Not part of :meth:`as_dict`, whose
        content depends only on the data."""
        seconds = self.seconds or 0.0
        return {
            "seconds": round(seconds, 3),
            "records_per_second": round(self.records_read / seconds) if seconds else None,
            "raw_mb_per_second": (
                round(self.raw_bytes / 1e6 / seconds, 1) if seconds and self.raw_bytes else None
            ),
            "raw_bytes": self.raw_bytes,
            "engine": self.engine,
            "threads": self.threads,
        }

    def summary(self, max_files: int = 3) -> str:
        """A short closing report: files, rows, bytes, time and speed, skips by reason with
        two examples each; files are named when there are at most ``max_files`` (the rest is
        in :meth:`as_dict`, the CLI's ``--json``)."""
        files = sorted(self.files.items())
        if len(files) <= max_files:
            named = ", ".join(f"{path} ({item.rows:,} rows)" for path, item in files)
            where = named or "no files"
        else:
            where = f"{len(files):,} files"
        speed = self.speed()
        rate = f"{speed['records_per_second']:,} records/s" if speed["records_per_second"] else ""
        if speed["raw_mb_per_second"]:
            rate += f", {speed['raw_mb_per_second']:,} raw MB/s"
        engine = f"{self.engine}" + (f", {self.threads} threads" if self.threads > 1 else "")
        text = (
            f"{self.source}: {self.records_read:,} records -> {self.rows_written:,} rows in "
            f"{where}; {self.bytes_written / 1e6:,.1f} MB; {self.seconds:.1f}s"
            + (f" ({rate}; {engine})" if rate else f" ({engine})")
        )
        for name in self.swept:
            text += f"\n  removed {name} (left by a cleaning run that died)"
        for reason, entry in sorted(self.skipped.items()):
            text += f"\n  skipped {entry.count}: {reason}"
            for example in entry.examples[:2]:
                text += f"\n    e.g. {example.raw}: {example.detail}"
        return text


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
    if spec.columnar is not None:  # the engine that cleans it, and its rule's kernels
        modules |= {"hrm_assets.cleaning.columnar", "hrm_assets.cleaning.columnar_clean"}
        modules.add(spec.columnar.clean.__module__)
    for name in modules:
        importlib.import_module(name)
    files = sorted(Path(sys.modules[name].__file__).resolve() for name in modules)
    # The name is part of it: sources of one family module share files but not their rules.
    identity = [spec.name, [[path.name, file_sha256(path)] for path in files]]
    if spec.rules_version:  # rules kept outside the code (sources.yaml); code sources have none
        identity.append(spec.rules_version)
    return value_sha256(identity)


# -- the cleaning run --------------------------------------------------------------------------


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
        self.writers: dict[str, JsonlWriter | ParquetRowWriter] = {}
        self._open_writers: dict[str, JsonlWriter | ParquetRowWriter] = {}
        self._lock = threading.Lock()
        self.group = AtomicGroup()

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
        writer = open_writer(path, self.fmt, self.columns, budget, self.group)
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
    from hrm_assets.cleaning.columnar_clean import default_threads

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
    from hrm_assets.cleaning.columnar_clean import clean_parts_columnar, columnar_parts

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
        if relative in outputs.writers:
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


# -- CLI ---------------------------------------------------------------------------------------


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m hrm_assets.cleaning",
        description="Clean raw sources into <out>/<data_io relative path>.",
    )
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="SOURCE",
        help=f"source names, or 'all' ({', '.join(SOURCES)})",
    )
    parser.add_argument(
        "--raw-root",
        type=Path,
        default=None,
        help=f"local raw mirror (default ${settings.RAW_ROOT_ENV}; unset: the Hub)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="cleaned root (default <$HRM_DATA_ROOT>/cleaned)"
    )
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads for a columnar source's parts (default: every core; files do not change)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print each report as JSON, with every file's detail"
    )
    return parser.parse_args(argv)


class ProgressMeter:
    """Feeds a tqdm bar from ``clean_source``'s callbacks (possibly from several threads):
    rows per second on the bar, raw MB/s beside it."""

    def __init__(self, bar):
        self.bar = bar
        self.started = time.monotonic()
        self.bytes = 0
        self._lock = threading.Lock()

    def records(self, count: int) -> None:
        with self._lock:
            self.bar.update(count)

    def raw_bytes(self, count: int) -> None:
        with self._lock:
            self.bytes += count
            elapsed = max(time.monotonic() - self.started, 1e-9)
            self.bar.set_postfix_str(
                f"{self.bytes / 1e6:,.0f} MB raw, {self.bytes / 1e6 / elapsed:,.1f} MB/s",
                refresh=False,
            )


class ProgressLog:
    """``clean_source``'s progress callbacks as a line to ``log`` every ``interval`` seconds
    (the cleaned asset's Dagster log): records and raw bytes so far, records/s and MB/s."""

    def __init__(self, log: Callable[[str], None], name: str, interval: float = 10.0):
        self.log, self.name, self.interval = log, name, interval
        self.started = self.last = time.monotonic()
        self.count = self.bytes = 0
        self._lock = threading.Lock()

    def records(self, count: int) -> None:
        with self._lock:
            self.count += count
            now = time.monotonic()
            if now - self.last < self.interval:
                return
            self.last = now
            elapsed = max(now - self.started, 1e-9)
            message = (
                f"{self.name}: {self.count:,} records read, {self.count / elapsed:,.0f} records/s"
            )
            if self.bytes:
                message += (
                    f", {self.bytes / 1e6:,.0f} MB raw, {self.bytes / 1e6 / elapsed:,.1f} MB/s"
                )
        self.log(message)

    def raw_bytes(self, count: int) -> None:
        with self._lock:
            self.bytes += count


def _selected(names: Iterable[str]) -> list[SourceSpec]:
    names = list(names)
    if names == ["all"]:
        return list(SOURCES.values())
    return [get_source(name) for name in names]


def main(argv: Sequence[str] | None = None) -> int:
    from tqdm import tqdm

    args = _parse_args(argv)
    try:
        specs = _selected(args.sources)
    except KeyError as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    if args.batch_size < 1:
        print("error: --batch-size must be at least 1", file=sys.stderr)
        return 2
    if args.threads is not None and args.threads < 1:
        print("error: --threads must be at least 1", file=sys.stderr)
        return 2
    raw_root = args.raw_root.absolute() if args.raw_root else settings.raw_root()
    if isinstance(raw_root, ObjectRoot):
        # Read through the local working copy, refreshed by ETag (docs/STORAGE.md).
        raw_root = mirror_tree(raw_root).local
    out_root = args.out.absolute() if args.out else settings.cleaned_root()
    failed = []
    for spec in specs:
        try:
            with tqdm(desc=spec.name, unit=" rows", unit_scale=True, file=sys.stderr) as bar:
                meter = ProgressMeter(bar)
                report = clean_source(
                    spec,
                    out_root,
                    raw_root,
                    args.batch_size,
                    progress=meter.records,
                    progress_bytes=meter.raw_bytes,
                    threads=args.threads,
                )
        except (OSError, ValueError, RuntimeError) as error:
            print(f"error: {error}", file=sys.stderr)
            failed.append(spec.name)
            continue
        if args.json:
            print(json.dumps({**report.as_dict(), **report.speed()}, ensure_ascii=False))
        else:
            print(report.summary())
    if failed:
        print(f"error: {len(failed)} source(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
