"""The cleaned row and a streaming, validating reader of cleaned files (JSONL or Parquet)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from hrm_assets.contracts.framing import KNOWN_TAGS, split_condition

FIELDS = ("condition", "instruction", "response")
# The column order of data_io's Parquet cleaners (``{"instruction": [], "response": [],
# "condition": []}``) and of its ARB script's dicts.
INSTRUCTION_FIRST = ("instruction", "response", "condition")


class Row(NamedTuple):
    condition: str
    instruction: str
    response: str


class RowError(ValueError):
    """A cleaned row is malformed. ``str(error)`` names the file, the row and the field."""

    def __init__(self, path: Path | str, row: int, field: str | None, problem: str):
        self.path, self.row, self.field, self.problem = str(path), row, field, problem
        where = f"{self.path}: row {row}" + (f", field {field!r}" if field else "")
        super().__init__(f"{where}: {problem}")


def unknown_tags(condition: str, known: tuple[str, ...] | list[str] = KNOWN_TAGS) -> list[str]:
    return [tag for tag in split_condition(condition) if tag not in known]


def validate_row(obj: object, path: Path | str, row: int) -> Row:
    """Check one decoded row: an object with three string fields and known condition tags."""
    if not isinstance(obj, dict):
        raise RowError(path, row, None, f"expected a JSON object, got {type(obj).__name__}")
    values = []
    for field in FIELDS:
        if field not in obj:
            raise RowError(path, row, field, "missing")
        value = obj[field]
        if not isinstance(value, str):
            kind = "null" if value is None else type(value).__name__
            raise RowError(path, row, field, f"expected a string, got {kind}")
        values.append(value)
    bad = unknown_tags(values[0])
    if bad:
        raise RowError(
            path, row, "condition", f"unknown tag(s) {bad}; known tags: {', '.join(KNOWN_TAGS)}"
        )
    return Row(*values)


# The whitespace JSON allows around a value. bytes.strip() would also take a form feed or a
# vertical tab, which data_io's serde_json (and our Rust reader) reject as malformed.
JSON_WHITESPACE = b" \t\r\n"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value: object) -> bool:
    """Whether a decoded JSON value holds a lone surrogate (``"\\ud800"``): ``json.loads``
    accepts the escape, serde_json (data_io's reader, and ours) rejects it as not Unicode."""
    if isinstance(value, str):
        return _LONE_SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_lone_surrogate(key) or _lone_surrogate(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_lone_surrogate(item) for item in value)
    return False


def _iter_jsonl(path: Path) -> Iterator[Row]:
    with open(path, "rb") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip(JSON_WHITESPACE):
                continue
            try:
                obj = json.loads(line)
            except UnicodeDecodeError as exc:
                raise RowError(path, line_number, None, f"invalid UTF-8: {exc}") from None
            except json.JSONDecodeError as exc:
                raise RowError(path, line_number, None, f"malformed JSON: {exc}") from None
            # Surrogates come only from \u escapes (raw ones are invalid UTF-8): look only then.
            if b"\\u" in line and _lone_surrogate(obj):
                raise RowError(
                    path, line_number, None, "malformed JSON: a \\u escape is a lone surrogate"
                )
            yield validate_row(obj, path, line_number)


def _iter_parquet(path: Path, batch_size: int) -> Iterator[Row]:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    missing = [f for f in FIELDS if f not in parquet.schema_arrow.names]
    if missing:
        raise RowError(path, 0, missing[0], "column missing from the Parquet schema")
    row_number = 0
    for batch in parquet.iter_batches(batch_size=batch_size, columns=list(FIELDS)):
        for obj in batch.to_pylist():
            row_number += 1
            # data_io's reader (and our Rust one) takes a null as the empty string.
            for field in FIELDS:
                if obj[field] is None:
                    obj[field] = ""
            yield validate_row(obj, path, row_number)


def iter_cleaned_rows(path: Path | str, batch_size: int = 8192) -> Iterator[Row]:
    """Stream the rows of a cleaned file, validating each.

    Rows are numbered from 1: the line number for JSONL (blank lines are skipped but counted),
    the row index + 1 for Parquet. A Parquet null is read as the empty string, as data_io reads
    it (a JSON null is an error). Raises :class:`RowError` on the first bad row.
    """
    path = Path(path)
    if path.suffix == ".jsonl":
        return _iter_jsonl(path)
    if path.suffix == ".parquet":
        return _iter_parquet(path, batch_size)
    raise RowError(
        path, 0, None, f"unsupported file type {path.suffix!r}: expected .jsonl or .parquet"
    )
