"""Which cleaned file a partition is, and how the partition set must change. Which files a
source has: :mod:`hrm_assets.cleaning.source_files` (``files_of_source`` and
``files_by_source``, named here too for the importers of this module)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hrm_assets.cleaning.source_files import files_by_source, files_of_source
from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.layout import (
    CleanedFile,
    LayoutError,
    is_cleaned_file,
    is_temporary,
    safe_name,
)

__all__ = [
    "files_by_source",
    "files_of_source",
    "partition_changes",
    "partition_file",
    "relative_paths_for",
]


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
