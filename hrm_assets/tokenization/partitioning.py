"""Which cleaned files belong to which source, and how the partition set must change."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.layout import (
    CleanedFile,
    LayoutError,
    is_cleaned_file,
    is_cleaned_name,
    is_temporary,
    safe_name,
)


def files_of_source(
    spec: SourceSpec, cleaned_root: Path, scanned: list[CleanedFile] | None = None
) -> list[CleanedFile]:
    """The source's cleaned files present on disk, sorted by safe name.

    Without ``scanned`` only the source's own files (or its routed folder) are looked at, so a
    per-partition lookup does not walk the whole cleaned tree.
    """
    cleaned_root = Path(cleaned_root)
    if scanned is None:
        if spec.route is None or spec.static_outputs:
            candidates = [cleaned_root / relative for relative in spec.static_outputs]
        else:
            folder = cleaned_root / spec.output.rstrip("/")
            candidates = sorted(folder.rglob(f"*.{spec.format}")) if folder.is_dir() else []
        scanned = [
            CleanedFile(path=path, root=cleaned_root)
            for path in candidates
            if is_cleaned_name(path.name)
            and is_cleaned_file(path)
            and not is_temporary(path.relative_to(cleaned_root))
        ]
    found = [item for item in scanned if spec.writes(item.relative)]
    return sorted(found, key=lambda item: item.safe_name)


def files_by_source(
    specs: Iterable[SourceSpec], scanned: Iterable[CleanedFile]
) -> dict[str, list[CleanedFile]]:
    """The scanned files of each source (by name), in scan order, matching each file only
    against the sources writing under its top folder (or file name), not against all of them."""
    specs = list(specs)
    by_top: dict[str, list[SourceSpec]] = {}
    for spec in specs:
        outputs = spec.static_outputs if spec.route is None or spec.route_outputs else [spec.output]
        for top in {output.split("/", 1)[0] for output in outputs}:
            by_top.setdefault(top, []).append(spec)
    found: dict[str, list[CleanedFile]] = {spec.name: [] for spec in specs}
    for item in scanned:
        for spec in by_top.get(item.relative.split("/", 1)[0], ()):
            if spec.writes(item.relative):
                found[spec.name].append(item)
    return found


def relative_paths_for(name: str) -> list[str]:
    """Every relative path whose tokenized folder name is ``name`` (each ``__`` may be a ``/``)."""

    def spellings(rest: str) -> list[str]:
        if not rest:
            return [""]
        found = [rest[0] + tail for tail in spellings(rest[1:])]
        if rest.startswith("__"):
            found += ["/" + tail for tail in spellings(rest[2:])]
        return found

    return sorted(
        {
            candidate
            for candidate in spellings(name)
            if all(candidate.split("/")) and safe_name(candidate) == name
        }
    )


def partition_file(spec: SourceSpec, cleaned_root: Path, name: str) -> CleanedFile | None:
    """The source's cleaned file whose tokenized folder is ``name``, or None if it is absent.

    Only the paths that could map to ``name`` are looked at. If more than one of them exists
    the folder would be ambiguous: :class:`LayoutError` names both files.
    """
    cleaned_root = Path(cleaned_root)
    present = [
        CleanedFile(path=cleaned_root / relative, root=cleaned_root)
        for relative in relative_paths_for(name)
        if not is_temporary(relative) and is_cleaned_file(cleaned_root / relative)
    ]
    if len(present) > 1:
        raise LayoutError(
            f"{present[0].path} and {present[1].path} both map to the tokenized folder "
            f"{name!r}; rename one of them"
        )
    if not present or not spec.writes(present[0].relative):
        return None
    return present[0]


def partition_changes(
    registered: Iterable[str], present: Iterable[str]
) -> tuple[list[str], list[str]]:
    """(keys to add, keys to remove) so that the registered set equals the present one."""
    registered, present = set(registered), set(present)
    return sorted(present - registered), sorted(registered - present)
