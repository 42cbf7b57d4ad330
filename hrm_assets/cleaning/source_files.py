"""Which cleaned files belong to which source: on disk, or in an object-storage listing.

Tokenization's partitions are these files (``hrm_assets.tokenization.partitioning``); the
cleaned build compares them with what a run writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.layout import (
    CleanedFile,
    CleanedScan,
    LayoutError,
    is_cleaned_file,
    is_cleaned_name,
    is_temporary,
    scan_cleaned_tree,
)
from hrm_assets.common.storage import ObjectRoot, ObjectStore


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


def listed_cleaned_files(
    root: ObjectRoot, local: Path, relatives: Iterable[str]
) -> list[CleanedFile]:
    """Every cleaned object of a listing (data_io's names, no ``.tmp-`` entries) as a
    :class:`CleanedFile` at its place in the working copy ``local``, sorted by safe name;
    :class:`LayoutError` if two map to one tokenized folder."""
    found: dict[str, CleanedFile] = {}
    for relative in relatives:
        if not is_cleaned_name(relative.rsplit("/", 1)[-1]) or is_temporary(relative):
            continue
        item = CleanedFile(path=local / relative, root=local)
        earlier = found.setdefault(item.safe_name, item)
        if earlier is not item:
            raise LayoutError(
                f"{root.join(earlier.relative)} and {root.join(relative)} both "
                f"map to the tokenized folder {item.safe_name!r}; rename one of them"
            )
    return [found[name] for name in sorted(found)]


def scan_cleaned_root(root: DataRoot) -> CleanedScan:
    """Every cleaned file of a root as data_io finds them (``scan_cleaned_tree``), or for a
    root in object storage one listing, the files at their place in the working copy; an
    absent folder holds none."""
    if root.remote is not None:
        listed = ObjectStore(root.remote).list()
        return CleanedScan(listed_cleaned_files(root.remote, root.local, listed), [])
    if root.local.is_dir():
        return scan_cleaned_tree(root.local)
    return CleanedScan([], [])
