"""Reading ``sources.yaml``: its declarations, validated, or an error naming file, source and key.

The file holds one key, ``sources``: a list of declarations (see :mod:`.model` and
docs/SOURCES.md). Which file is read is decided by
:func:`hrm_assets.common.settings.sources_yaml_path`.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from hrm_assets.cleaning.sources.declared import model
from hrm_assets.cleaning.sources.declared.model import SourceDeclaration
from hrm_assets.common.config_errors import field_problems

# libyaml's safe loader when PyYAML was built with it, else the pure one.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TOP_LEVEL_KEYS = ("sources",)


class DeclaredSourceError(ValueError):
    """``sources.yaml`` is unreadable or a declaration is invalid; the message names the file,
    the source and the key path."""


def load_declarations(path: Path) -> list[SourceDeclaration]:
    """The declarations of ``path`` in file order; DeclaredSourceError on the first problem
    (unreadable YAML, an unknown key, a wrong type, two sources of one name)."""
    path = Path(path)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    except FileNotFoundError:
        raise DeclaredSourceError(f"{path}: sources file not found") from None
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise DeclaredSourceError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if raw is None:
        return []
    if not isinstance(raw, dict):
        raise DeclaredSourceError(
            f"{path}: expected a mapping with key 'sources', got {type(raw).__name__}"
        )
    unknown = [key for key in raw if key not in _TOP_LEVEL_KEYS]
    if unknown:
        raise DeclaredSourceError(
            f"{path}: unknown top-level key(s) {unknown} (known: {', '.join(_TOP_LEVEL_KEYS)})"
        )
    items = raw.get("sources") or []
    if not isinstance(items, list):
        raise DeclaredSourceError(f"{path}: 'sources' must be a list, got {type(items).__name__}")
    declarations: list[SourceDeclaration] = []
    for index, item in enumerate(items):
        where = f"{path}: sources[{index}]"
        if not isinstance(item, dict):
            raise DeclaredSourceError(f"{where}: expected a mapping, got {item!r}")
        if isinstance(item.get("name"), str):
            where += f" (source {item['name']!r})"
        try:
            declaration = SourceDeclaration.model_validate(item)
        except ValidationError as exc:
            raise DeclaredSourceError(f"{where}: {describe_problems(exc)}") from None
        if any(known.name == declaration.name for known in declarations):
            raise DeclaredSourceError(f"{where}: name {declaration.name!r} is declared twice")
        declarations.append(declaration)
    return declarations


# Labels pydantic puts in an error's location for the branch of a union it tried.
_BRANCH_LABELS = frozenset(
    {"str", "int", *(name for name, value in vars(model).items() if isinstance(value, type))}
)


def _key_path(location: tuple) -> str:
    """``fields.response.strip`` from pydantic's location, without its union-branch labels
    (``str``, ``ConditionFromColumn``, ``function-after[...]``)."""
    parts = [
        str(part)
        for part in location
        if not (isinstance(part, str) and (part in _BRANCH_LABELS or "[" in part))
    ]
    return ".".join(parts) or "(source)"


def describe_problems(exc: ValidationError) -> str:
    """``key.path: problem (got value)`` for each error, on one line. For a key that takes a
    string or a mapping, the branch that does not match the given value is not reported."""
    return field_problems(
        exc,
        _key_path,
        wording={"extra_forbidden": "unknown key", "missing": "missing"},
        skip=_other_branch,
    )


def _other_branch(err) -> bool:
    # the mapping form was given; its own errors say what is wrong
    return err["type"] == "string_type" and isinstance(err.get("input"), dict)
