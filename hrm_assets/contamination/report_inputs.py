"""What the contamination report reads, wherever the roots are: each source's cleaned files (on
disk, or objects of an ``s3://`` root) and each file's tokenized folder (on disk, or in object
storage), whose sidecars spare reading the file when they are current
(:func:`.sidecar.sidecar_for`, then :func:`.scan.analyze`).

- A tokenized root in object storage: :data:`FOLDER_FILES` of its folders (``manifest.json``,
  ``metadata.json`` and the sidecars, not the arrays) are refreshed into its working copy, only
  objects whose ETag changed downloaded (``tokenization.remote.mirror_folder_files``); a folder
  counts only if it is complete by the bucket's commit rule.
- A cleaned object is judged against its folder by its listing (size and last-modified time:
  what the folder's ``metadata.json`` recorded). One without current sidecars, or with sidecars
  scanned against other evaluation sets, is downloaded into a temporary folder and read there.

So a report whose files all have current sidecars reads no cleaned data, on disk or in a bucket.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from hrm_assets import _core
from hrm_assets.common.layout import CleanedFile
from hrm_assets.common.manifest import MANIFEST_FILE
from hrm_assets.common.storage import ObjectInfo
from hrm_assets.contamination.sidecar import (
    KEYS_FILE,
    SCAN_FILE,
    FolderOfObject,
    sidecar_for,
)

# What the report needs of a tokenized folder in a bucket
# (``tokenization.remote.mirror_folder_files``).
FOLDER_FILES = (MANIFEST_FILE, _core.METADATA_FILE, SCAN_FILE, KEYS_FILE)


class CleanedObjects(Protocol):
    """Cleaned objects as listed (``adoption.objects.AdoptedObjects``,
    ``tokenization.remote.RemoteCleaned``)."""

    def info_of(self, item: CleanedFile) -> ObjectInfo:
        """The object's listing."""
        ...

    def url_of(self, item: CleanedFile) -> str: ...

    def read_locally(
        self, files: Sequence[CleanedFile]
    ) -> contextlib.AbstractContextManager[list[CleanedFile]]:
        """The objects downloaded into a temporary folder, in the order given."""
        ...


@dataclass
class ReportInputs:
    """:func:`.scan.analyze`'s ``files_by_source`` and ``tokenized``, and the name each file's
    result should carry (an object's URL rather than where it was read)."""

    files: dict[str, list[str]] = field(default_factory=dict)
    tokenized: dict[str, Path | FolderOfObject] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)

    def name_results(self, report) -> None:
        """Name each file of ``report`` (a :class:`.scan.Report`) as :attr:`shown` says."""
        for result in report.files:
            result.name = self.shown.get(result.name, result.name)


@contextlib.contextmanager
def report_inputs(
    files_by_source: Mapping[str, Sequence[CleanedFile]],
    tokenized_root: Path,
    label: Mapping,
    objects: CleanedObjects | None = None,
    complete: set[str] | None = None,
) -> Iterator[ReportInputs]:
    """The inputs of the report over ``files_by_source`` (each source's files in safe-name
    order) and their folders under ``tokenized_root`` (on disk, or a working copy of which only
    the ``complete`` folders count). With ``objects``, the files are its objects: those whose
    sidecars are not current for ``label`` are downloaded, for as long as the context lasts."""
    inputs = ReportInputs()

    def folder_of(item: CleanedFile) -> Path | FolderOfObject | None:
        if complete is not None and item.safe_name not in complete:
            return None
        folder = Path(tokenized_root) / item.safe_name
        if objects is None:
            return folder
        info = objects.info_of(item)
        return FolderOfObject(folder, info.size, info.last_modified)

    folders = {
        source: [(item, folder_of(item)) for item in items]
        for source, items in files_by_source.items()
    }
    unread = [
        item
        for pairs in folders.values()
        for item, folder in pairs
        if objects is not None and (folder is None or not _current(folder, label))
    ]
    with contextlib.ExitStack() as stack:
        copies = stack.enter_context(objects.read_locally(unread)) if unread else []
        read_at = {item.safe_name: copy.path for item, copy in zip(unread, copies, strict=True)}
        for source, pairs in folders.items():
            paths = inputs.files.setdefault(source, [])
            for item, folder in pairs:
                path = str(read_at.get(item.safe_name, item.path))
                paths.append(path)
                if objects is not None:
                    inputs.shown[path] = objects.url_of(item)
                if folder is not None:
                    inputs.tokenized[path] = folder
        yield inputs


def _current(folder: FolderOfObject, label: Mapping) -> bool:
    """Whether the folder's sidecars spare reading its object: current for it, and scanned
    against the index ``label`` names."""
    sidecar = sidecar_for(folder, folder.folder)
    return sidecar is not None and sidecar.label == dict(label)
