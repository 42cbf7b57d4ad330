"""Where a declared source's records come from: a Hub dataset, or local JSONL/Parquet/CSV files.

A Hub source uses the built-in sources' :class:`~hrm_assets.cleaning.sources.hub.HubLayout`
unchanged (streamed with ``datasets``, or read from a mirror under the raw root), so a declared copy
of a built-in source reads exactly the same records.

A local source is a path or glob relative to the folder of ``sources.yaml`` (or absolute), read
whatever the raw root; each matching file, in sorted order, is one raw part named by its path
relative to the glob's fixed folder, so a skipped record is reported as ``<file>#<n>``. A JSONL
line that is not JSON, and a CSV row with more or fewer fields than its header, are records of
their own that cleaning counts as skipped (:class:`UnreadableRecord`), never lost silently.
"""

from __future__ import annotations

import csv
import glob
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.cleaning.sources.local_files import (
    batched,
    glob_files,
    parquet_record_batches,
    relative_posix,
    write_parquet_records,
)
from hrm_assets.cleaning.sources.spec import RawPart, Record, SourceSpec
from hrm_assets.common.atomic import atomic_file

MALFORMED_JSON_LINE = "malformed JSON line"
BAD_CSV_ROW = "CSV row does not have the header's fields"


@dataclass(frozen=True)
class UnreadableRecord:
    """A raw line that is no record (bad JSON, a CSV row of the wrong width): cleaning skips it
    under ``reason``, ``detail`` saying which line and why."""

    reason: str
    detail: str


def fixed_folder(base: Path, pattern: str) -> tuple[Path, str]:
    """``(folder, rest)``: the longest leading part of ``base / pattern`` without glob
    characters, and the pattern relative to it (``/data/x/*.jsonl`` -> ``/data/x``, ``*.jsonl``)."""
    full = Path(base) / pattern
    parts = full.parts
    cut = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts) - 1)
    return Path(*parts[:cut]), Path(*parts[cut:]).as_posix()


@dataclass(frozen=True)
class LocalFilesLayout:
    """Files matching ``pattern`` under ``folder`` (absolute), all of format ``file_format``."""

    folder: Path
    pattern: str
    file_format: str

    @property
    def own_root(self) -> Path:
        """The folder this layout reads, whatever the raw root (for the raw data version)."""
        return self.folder

    def describe(self, spec: SourceSpec) -> str:
        return f"{self.folder / self.pattern} ({self.file_format})"

    def files(self, spec: SourceSpec) -> list[Path]:
        if not self.folder.is_dir():
            raise FileNotFoundError(f"{spec.name}: raw folder {self.folder} does not exist")
        found = glob_files(self.folder, self.pattern)
        if not found:
            raise FileNotFoundError(f"{spec.name}: no raw files match {self.folder / self.pattern}")
        return found

    def raw_files(self, spec: SourceSpec, raw_root: Path | None) -> list[Path]:
        return self.files(spec)

    def parts(self, spec: SourceSpec, raw_root: Path | None, batch_size: int) -> Iterator[RawPart]:
        for path in self.files(spec):
            yield RawPart(relative_posix(path, self.folder), self.read_batches(path, batch_size))

    def read_batches(self, path: Path, batch_size: int) -> Iterator[list[Record]]:
        if self.file_format == "parquet":
            return parquet_record_batches(path, batch_size)
        if self.file_format == "jsonl":
            return batched(jsonl_records(path), batch_size)
        if self.file_format == "csv":
            return batched(csv_records(path), batch_size)
        raise ValueError(f"{path}: unknown raw format {self.file_format!r}")

    def write_parts(
        self, spec: SourceSpec, raw_root: Path, parts: Mapping[str, Iterable[Record]]
    ) -> list[Path]:
        """Write each part as the file it names (relative to the folder), in this format."""
        written = []
        for part, records in parts.items():
            path = self.folder / part
            rows = [dict(record) for record in records]
            if self.file_format == "parquet":
                write_parquet_records(path, rows)
            elif self.file_format == "jsonl":
                with atomic_file(path, "wb") as handle:
                    for row in rows:
                        handle.write(json.dumps(row, ensure_ascii=False).encode() + b"\n")
            else:
                text = io.StringIO(newline="")
                writer = csv.DictWriter(text, fieldnames=list(rows[0]) if rows else [])
                writer.writeheader()
                writer.writerows(rows)
                with atomic_file(path, "wb") as handle:
                    handle.write(text.getvalue().encode("utf-8"))
            written.append(path)
        return written


def jsonl_records(path: Path) -> Iterator[Record | UnreadableRecord]:
    """The objects of a JSONL file in order; blank lines are skipped, a line that is not JSON
    (or not UTF-8) is an :class:`UnreadableRecord` naming its line number."""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip(b" \t\r\n"):
                continue
            try:
                yield json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                yield UnreadableRecord(MALFORMED_JSON_LINE, f"{path.name} line {number}: {error}")


def csv_records(path: Path) -> Iterator[Record | UnreadableRecord]:
    """The rows of a CSV file with a header line, as dicts of strings; a row with more or fewer
    fields than the header is an :class:`UnreadableRecord` naming its line."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            width = len(reader.fieldnames or [])
            for row in reader:
                if None in row or None in row.values():
                    fields = width + len(row.get(None) or []) - list(row.values()).count(None)
                    detail = f"{path.name} line {reader.line_num}: {fields} fields, header {width}"
                    yield UnreadableRecord(BAD_CSV_ROW, detail)
                else:
                    yield row
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text: {error}") from None
