"""Which cleaned files belong to which source, and how the partition set must change."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hrm_assets.layout import CleanedFile, scan_cleaned_files
from hrm_assets.sources import SourceSpec


def files_of_source(
    spec: SourceSpec, cleaned_root: Path, scanned: list[CleanedFile] | None = None
) -> list[CleanedFile]:
    """The source's cleaned files present on disk, sorted by safe name."""
    if scanned is None:
        scanned = scan_cleaned_files(cleaned_root) if Path(cleaned_root).is_dir() else []
    return [item for item in scanned if spec.writes(item.relative)]


def partition_changes(
    registered: Iterable[str], present: Iterable[str]
) -> tuple[list[str], list[str]]:
    """(keys to add, keys to remove) so that the registered set equals the present one."""
    registered, present = set(registered), set(present)
    return sorted(present - registered), sorted(registered - present)
