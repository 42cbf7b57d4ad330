"""Turn plain records of the pure modules into Dagster metadata values."""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

_COLUMN_TYPES = {bool: "bool", int: "int", float: "float", str: "string"}


def _column_type(records: Sequence[Mapping[str, Any]], column: str) -> str:
    for record in records:
        value = record.get(column)
        if value is not None:
            return _COLUMN_TYPES.get(type(value), "string")
    return "string"


def table(records: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None):
    """A table metadata value; columns default to the first record's keys."""
    if columns is None:
        columns = list(records[0].keys()) if records else []
    schema = dg.TableSchema(
        columns=[dg.TableColumn(name, _column_type(records, name)) for name in columns]
    )
    rows = [dg.TableRecord({name: record.get(name) for name in columns}) for record in records]
    return dg.MetadataValue.table(records=rows, schema=schema)


def share_bars(shares: Mapping[str, float], width: int = 40, title: str = "Share") -> str:
    """A Markdown table with a text bar per entry, for shares in [0, 1]."""
    lines = [f"| Name | {title} | |", "|---|---:|---|"]
    for name, share in sorted(shares.items(), key=lambda item: -item[1]):
        bar = "█" * max(0, round(share * width))
        lines.append(f"| {name} | {share:.1%} | {f'`{bar}`' if bar else ''} |")
    return "\n".join(lines)
