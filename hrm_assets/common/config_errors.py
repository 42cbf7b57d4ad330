"""How a pydantic ``ValidationError`` reads to a user: one line, ``key: problem`` per error.

The one statement of it for every validated input: the sampler's settings, the rules of
``prefix_config.yaml`` and its ``mixture:`` section, the sources of ``sources.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

Location = tuple[int | str, ...]


def dotted_key(location: Location) -> str:
    """``mixture.groups.0`` from pydantic's location (empty for the model itself)."""
    return ".".join(str(part) for part in location)


def field_problems(
    exc: ValidationError,
    key: Callable[[Location], str] = dotted_key,
    *,
    wording: Mapping[str, str] | None = None,
    show_value: bool = True,
    skip: Callable[[Mapping[str, Any]], bool] | None = None,
) -> str:
    """``key: problem`` for each error of ``exc``, each line once, joined by ``"; "``.

    The problem is the message our own checks raised (``value_error``), as written; for a
    missing or unknown key, ``wording[type]`` when given, else pydantic's message; otherwise
    pydantic's message followed by the value given (``(got 'x')``, unless ``show_value`` is
    False). ``key`` names the place from the error's location; ``skip(error)`` leaves an error
    out (a union branch that does not apply, for example).
    """
    found = []
    for err in exc.errors():
        if skip is not None and skip(err):
            continue
        kind = err["type"]
        if kind == "value_error":
            problem = str(err["ctx"]["error"])
        elif kind in ("missing", "extra_forbidden"):
            problem = (wording or {}).get(kind, err["msg"])
        elif show_value:
            problem = f"{err['msg']} (got {err['input']!r})"
        else:
            problem = err["msg"]
        found.append(f"{key(err['loc'])}: {problem}")
    return "; ".join(dict.fromkeys(found))
