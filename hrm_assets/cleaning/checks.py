"""The check of every produced row (docs/CONTRACTS.md section 1) and the reasons it gives."""

from __future__ import annotations

from collections.abc import Mapping

from hrm_assets.cleaning.rows import FIELDS, Row, RowError, unknown_tags, validate_row

# Reasons of the generic checks (a source's own reasons come from its SkipRecord).
UNKNOWN_TAG = "unknown condition tag"
NOT_A_STRING = "field missing or not a string"
NOT_UTF8 = "text is not valid UTF-8"
NOT_A_ROW = "cleaning function yielded a non-row"


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
