"""Which raw file of a source cannot be read, for an error message that names it.

``datasets`` streams a part's files one after another and its errors (``Corrupt snappy
compressed data``, ``JSON parse error ... in row 5``) do not say which file failed. After such
an error the part's files are read again here, one by one, until one fails. This runs only on
the error path, so reading whole files again is affordable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path


def _check_parquet(path: Path) -> None:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    for index in range(parquet.num_row_groups):
        parquet.read_row_group(index)


def _check_jsonl(path: Path) -> None:
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    json.loads(line)
                except ValueError as error:
                    raise ValueError(f"line {number}: {error}") from error


_CHECKS = {".parquet": _check_parquet, ".jsonl": _check_jsonl}


def first_unreadable(files: Iterable[Path]) -> tuple[Path, str] | None:
    """The first of ``files`` (Parquet or JSONL) that cannot be read through, with what went
    wrong; None if every one reads (the failure was elsewhere)."""
    for path in files:
        check = _CHECKS.get(Path(path).suffix)
        if check is None:
            continue
        try:
            check(Path(path))
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            return Path(path), f"{type(error).__name__}: {error}"
    return None
