"""The rows of a tokenized folder, decoded back to spans of tokens."""

from __future__ import annotations

import json
from pathlib import Path


def rows_of(path: Path) -> list[dict]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
