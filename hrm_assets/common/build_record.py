"""Build records: what an output was made from, so an unchanged rebuild touches nothing.

A record is a small JSON file stored next to (never inside) the output it describes. It holds
the fingerprint of the inputs and of the output; an output is current when both still match.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hrm_assets.common.atomic import atomic_write_text


def read_record(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def write_record(path: Path, inputs: str, outputs: str, **extra: Any) -> None:
    record = {"inputs": inputs, "outputs": outputs, **extra}
    atomic_write_text(path, json.dumps(record, sort_keys=True, indent=1))


def is_current(record: dict[str, Any] | None, inputs: str, outputs: str) -> bool:
    """True when ``record`` was written for these inputs and the output is still as written."""
    return (
        record is not None and record.get("inputs") == inputs and record.get("outputs") == outputs
    )
