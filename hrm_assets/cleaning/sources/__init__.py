"""The source registry: every cleaned source, keyed by name (asset ``cleaned/<name>``).

Adding a source family is one module: ``sources/<family>.py`` defines the pure cleaning
function(s), a demo generator in the raw schema, and ``SPECS = (SourceSpec(...), ...)``; then
it is found automatically (any module of this package that defines ``SPECS``). The registry
checks that names and output paths (and their tokenized folder names) are unique.

Sources declared in ``sources.yaml`` (:mod:`hrm_assets.cleaning.sources.declared`) follow the
built-in ones; a declared name equal to a built-in one is an error.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable

from hrm_assets.cleaning.sources.spec import (
    CleanFn,
    DemoFn,
    OutputFormat,
    RawLayout,
    RawPart,
    Record,
    RouteFn,
    SkippedRow,
    SkipRecord,
    SourceSpec,
)
from hrm_assets.common.layout import safe_name


def _package_modules() -> tuple[str, ...]:
    """Every module of this package, sorted; those that define ``SPECS`` are source families,
    so adding a source never edits a shared file."""
    return tuple(sorted(info.name for info in pkgutil.iter_modules(__path__)))


def build_registry(specs: Iterable[SourceSpec]) -> dict[str, SourceSpec]:
    """Name -> spec; raises ValueError on a duplicate name, output path or safe name."""
    registry: dict[str, SourceSpec] = {}
    outputs: dict[str, str] = {}
    for spec in specs:
        if spec.name in registry:
            raise ValueError(f"source {spec.name!r} is defined twice")
        registry[spec.name] = spec
        for output in spec.static_outputs:
            key = safe_name(output)
            if key in outputs:
                raise ValueError(
                    f"sources {outputs[key]!r} and {spec.name!r} both write {output!r} "
                    f"(tokenized folder {key!r})"
                )
            outputs[key] = spec.name
    return registry


def _load_specs() -> list[SourceSpec]:
    specs: list[SourceSpec] = []
    for module_name in _package_modules():
        module = importlib.import_module(f"{__name__}.{module_name}")
        specs.extend(getattr(module, "SPECS", ()))
    from hrm_assets.cleaning.sources.declared import configured_specs

    specs.extend(configured_specs(built_in=specs))
    return specs


SOURCES: dict[str, SourceSpec] = build_registry(_load_specs())


def get_source(name: str) -> SourceSpec:
    """The spec called ``name``; KeyError listing the known names otherwise."""
    try:
        return SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; known sources: {', '.join(SOURCES)}") from None


__all__ = [
    "SOURCES",
    "CleanFn",
    "DemoFn",
    "OutputFormat",
    "RawLayout",
    "RawPart",
    "Record",
    "RouteFn",
    "SkippedRow",
    "SkipRecord",
    "SourceSpec",
    "build_registry",
    "get_source",
]
