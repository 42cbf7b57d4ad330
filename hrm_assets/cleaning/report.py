"""What a cleaning run reports: files and their rows, skips by reason with examples, speed."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hrm_assets.cleaning.rows import Row
from hrm_assets.contracts.framing import split_condition

MAX_SKIP_EXAMPLES = 5
PREVIEW_ROWS = 5
PREVIEW_CHARS = 500
NO_TAG = "(none)"  # the tag of a row whose condition is empty


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
