"""Canonical JSON: the same value always gives the same bytes, on any machine.

Keys are sorted, indentation is two spaces, strings are UTF-8 (not ``\\u`` escapes), and a
float is always written with :data:`FLOAT_DIGITS` decimals (``0.250000``), so that a share
computed as ``1/3`` on one machine and another does not depend on ``repr``'s shortest form
choices or on whether a figure happened to be a whole number. The file ends with a newline.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

FLOAT_DIGITS = 6
_INDENT = "  "


def canonical_json_bytes(value: Any) -> bytes:
    """``value`` (dicts with string keys, lists, tuples, str, int, float, bool, None) as
    canonical JSON. Raises ``TypeError`` for any other type and ``ValueError`` for NaN or an
    infinity, naming where in ``value`` it sits."""
    return (_encode(value, 0, "$") + "\n").encode("utf-8")


def _encode(value: Any, depth: int, where: str) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value} has no JSON form")
        text = f"{value:.{FLOAT_DIGITS}f}"
        # -0.000000 and 0.000000 are the same share.
        return text[1:] if text.startswith("-") and not text.strip("-0.") else text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    inner, outer = _INDENT * (depth + 1), _INDENT * depth
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"{where}: key {key!r} is not a string")
        items = [
            f"{inner}{json.dumps(key, ensure_ascii=False)}: "
            f"{_encode(value[key], depth + 1, f'{where}.{key}')}"
            for key in sorted(value)
        ]
        return "{\n" + ",\n".join(items) + f"\n{outer}}}"
    if isinstance(value, Sequence):
        if not value:
            return "[]"
        items = [
            f"{inner}{_encode(item, depth + 1, f'{where}[{index}]')}"
            for index, item in enumerate(value)
        ]
        return "[\n" + ",\n".join(items) + f"\n{outer}]"
    raise TypeError(f"{where}: {type(value).__name__} is not a JSON value")
