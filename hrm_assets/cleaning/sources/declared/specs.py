"""A declared source as a :class:`~hrm_assets.cleaning.sources.spec.SourceSpec`, so that the
registry, cleaning and the Dagster assets treat it as they treat a built-in source."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

from hrm_assets.cleaning.rows import FIELDS
from hrm_assets.cleaning.sources.declared.columnar_rule import declared_columnar_rule
from hrm_assets.cleaning.sources.declared.declarations import DeclaredSourceError
from hrm_assets.cleaning.sources.declared.layouts import (
    LocalFilesLayout,
    UnreadableRecord,
    fixed_folder,
)
from hrm_assets.cleaning.sources.declared.mapping import DeclaredCleaner, column_value
from hrm_assets.cleaning.sources.declared.model import SourceDeclaration
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.hub_splits import SPLIT_SEPARATOR, HubSplitsLayout
from hrm_assets.cleaning.sources.local_files import safe_filename
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec
from hrm_assets.common.hashing import file_sha256, value_sha256

# data_io's safe_filename keeps '.', so a value may give a hidden or over-long file name; such
# values are skipped under these reasons (a declared source's own rule, counted).
HIDDEN_NAME = "output: column value gives a hidden file name"
EMPTY_NAME = "output: column value is empty"
LONG_NAME = "output: column value too long for a file name"
MAX_NAME_BYTES = 200


def no_demo_records(rng) -> dict:
    """Declared sources have no invented corpus: ``make demo`` writes nothing for them."""
    return {}


class ValueRoute:
    """``route(record, part)`` of a ``per_value_of`` layout: ``<folder>/<safe value>.<format>``."""

    def __init__(self, source: str, folder: str, column: str, file_format: str):
        self.source, self.folder, self.column, self.format = source, folder, column, file_format

    def __call__(self, record: Record, part: str) -> str:
        if isinstance(record, UnreadableRecord):
            raise SkipRecord(record.reason, record.detail)
        value = column_value(self.source, record, self.column, "output", part)
        if value is None or isinstance(value, (dict, list)):
            kind = "null" if value is None else type(value).__name__
            raise SkipRecord(f"output: column {self.column!r} is {kind}", "")
        name = safe_filename(str(value))
        if not name:
            raise SkipRecord(EMPTY_NAME, f"column {self.column!r}")
        if name.startswith("."):
            raise SkipRecord(HIDDEN_NAME, f"{value!r} -> {name!r}"[:200])
        if len(name.encode()) + len(self.format) + 1 > MAX_NAME_BYTES:
            raise SkipRecord(LONG_NAME, f"{len(name)} characters")
        return f"{self.folder}/{name}.{self.format}"


def _package_code_hashes() -> list[list[str]]:
    """Every module of this package with its SHA-256: the declared rules are code too."""
    package = Path(__file__).resolve().parent
    return [[path.name, file_sha256(path)] for path in sorted(package.glob("*.py"))]


def source_spec(declaration: SourceDeclaration, base_dir: Path) -> SourceSpec:
    """The spec of ``declaration``; local paths are relative to ``base_dir`` (the folder of
    ``sources.yaml``)."""
    output = declaration.output_layout
    hub, local = declaration.hub, declaration.local
    if hub is not None:
        data_dir = hub.data_dir or ("{config}" if hub.config else "data")
        if SPLIT_SEPARATOR in hub.split:  # several splits, read in turn (data_io's whole load)
            layout = HubSplitsLayout(config_dir=data_dir, config=hub.config or "default")
        else:
            layout = HubLayout(config_dir=data_dir)
        location = {"hub_id": hub.id, "configs": (hub.config or "default",), "split": hub.split}
        if hub.revision is not None:
            location["revision"] = hub.revision
    else:
        folder, pattern = fixed_folder(Path(base_dir), local.path)
        layout = LocalFilesLayout(folder.absolute(), pattern, local.file_format)
        location = {"hub_id": None, "configs": None, "split": "files"}
    if output.file is not None:
        paths = {"output": output.file}
    else:
        route = ValueRoute(declaration.name, output.folder, output.per_value_of, output.file_format)
        paths = {"output": output.folder, "route": route}
    rules = declaration.model_dump(mode="json")
    spec = SourceSpec(
        name=declaration.name,
        **location,
        **paths,
        format=output.file_format,
        clean=DeclaredCleaner(declaration),
        layout=layout,
        demo=no_demo_records,
        description=declaration.description or f"Declared in sources.yaml: {declaration.name}",
        columns=tuple(declaration.columns) if declaration.columns else FIELDS,
        rules_version=value_sha256([rules, _package_code_hashes()]),
    )
    return dataclasses.replace(spec, columnar=declared_columnar_rule(declaration, spec))


def _folder(spec: SourceSpec) -> str | None:
    """The folder a source writes any file of its format under (a routed source whose files
    are not listed in advance), else None."""
    if spec.route is None or spec.route_outputs:
        return None
    return spec.output.rstrip("/") + "/"


def shared_output(spec: SourceSpec, other: SourceSpec) -> str | None:
    """A cleaned path or folder both sources would claim, else None. A source's cleaning run
    removes the files it claims but no longer writes, so two claims on one file must never be
    registered."""
    for path in spec.static_outputs:
        if other.writes(path):
            return path
    for path in other.static_outputs:
        if spec.writes(path):
            return path
    mine, theirs = _folder(spec), _folder(other)
    if mine is not None and theirs is not None:
        if mine.startswith(theirs) or theirs.startswith(mine):
            return min(mine, theirs, key=len)
    return None


def declared_specs(
    declarations: Iterable[SourceDeclaration],
    base_dir: Path,
    built_in: Iterable[SourceSpec] = (),
) -> list[SourceSpec]:
    """The specs of ``declarations``; DeclaredSourceError when one takes the name of a
    ``built_in`` source, or claims a cleaned file or folder another source claims."""
    others = list(built_in)
    specs: list[SourceSpec] = []
    for declaration in declarations:
        if any(other.name == declaration.name for other in others):
            raise DeclaredSourceError(
                f"source {declaration.name!r}: a built-in source has this name; choose another"
            )
        spec = source_spec(declaration, base_dir)
        for other in [*others, *specs]:
            clash = shared_output(spec, other)
            if clash is not None:
                raise DeclaredSourceError(
                    f"source {spec.name!r}: its output {clash!r} is also source "
                    f"{other.name!r}'s; choose another output file or folder"
                )
        specs.append(spec)
    return specs
