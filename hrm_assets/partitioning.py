"""Which cleaned files belong to which source, and how the partition set must change."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hrm_assets.layout import CleanedFile
from hrm_assets.sources import SourceSpec


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
            if path.is_file()
            and not any(part.startswith(".") for part in path.relative_to(cleaned_root).parts)
        ]
    found = [item for item in scanned if spec.writes(item.relative)]
    return sorted(found, key=lambda item: item.safe_name)


def partition_changes(
    registered: Iterable[str], present: Iterable[str]
) -> tuple[list[str], list[str]]:
    """(keys to add, keys to remove) so that the registered set equals the present one."""
    registered, present = set(registered), set(present)
    return sorted(present - registered), sorted(registered - present)
