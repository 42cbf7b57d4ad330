"""Declared sources: sources a user adds in ``sources.yaml`` instead of in Python.

Each entry (docs/SOURCES.md) names a Hub dataset or local JSONL/Parquet/CSV files, maps their
columns (or OpenAI-style chat messages) to the cleaned fields, sets the condition, optional row
filters and the output layout. It becomes a :class:`~hrm_assets.cleaning.sources.spec.SourceSpec` in
the registry (``hrm_assets.cleaning.sources.SOURCES``), so ``raw/``, ``cleaned/`` and ``tokenized/``
assets, the cleaning CLI and the checks take it like a built-in source.

- :mod:`.model`: the YAML schema (strict, unknown keys refused);
- :mod:`.declarations`: reading the file, errors naming file, source and key path;
- :mod:`.template`: ``{column}`` templates, nothing evaluated;
- :mod:`.chat`: the chat-format rule and its malformed cases;
- :mod:`.mapping`: the cleaning function (fields, condition, filters);
- :mod:`.layouts`: local files (Hub datasets use the built-in Hub layout);
- :mod:`.specs`: declaration -> SourceSpec.

Which file is read: :func:`hrm_assets.common.settings.sources_yaml_path` (``$HRM_SOURCES_YAML``,
else ``./sources.yaml`` when present; none: no declared sources).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hrm_assets.cleaning.sources.declared.declarations import DeclaredSourceError, load_declarations
from hrm_assets.cleaning.sources.declared.mapping import DeclaredMappingError
from hrm_assets.cleaning.sources.declared.specs import declared_specs
from hrm_assets.cleaning.sources.spec import SourceSpec
from hrm_assets.common import settings


def specs_from_file(path: Path, built_in: Iterable[SourceSpec] = ()) -> list[SourceSpec]:
    """The specs declared in ``path`` (local paths relative to its folder); DeclaredSourceError
    naming the file on any problem, a name or an output of a ``built_in`` source included."""
    path = Path(path).absolute()
    declarations = load_declarations(path)
    try:
        return declared_specs(declarations, path.parent, built_in)
    except (DeclaredSourceError, ValueError) as error:
        raise DeclaredSourceError(f"{path}: {error}") from None


def configured_specs(built_in: Iterable[SourceSpec] = ()) -> list[SourceSpec]:
    """The specs of the configured ``sources.yaml``; none when there is no such file."""
    path = settings.sources_yaml_path()
    return [] if path is None else specs_from_file(path, built_in)


__all__ = [
    "DeclaredMappingError",
    "DeclaredSourceError",
    "configured_specs",
    "specs_from_file",
]
