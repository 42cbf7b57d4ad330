"""The cleaned files a platform reads, wherever they are, chosen once: adopted folders (links
to files followed, a Hub cache), adopted ``s3://`` roots, or the project's own cleaned root.

Each answers :class:`CleanedContent`: its cleaned files, and each file's size and content
SHA-256 (for adopted roots from the memo kept under our data root, so an unchanged file or
object is not read again). The sensor, the adoption command and the tokenized step ask these
questions without testing which kind of root they hold; the folder-or-bucket decision is
:func:`adopted_roots`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hrm_assets.adoption.cleaned import (
    FOLDER_MEMO_FILE,
    AdoptedCorpus,
    AdoptedFolders,
    adopt_cleaned,
)
from hrm_assets.adoption.objects import OBJECT_MEMO_FILE, AdoptedObjects, adopt_objects
from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import CleanedFile, scan_cleaned_tree
from hrm_assets.common.storage import Location, ObjectRoot


class CleanedContent(Protocol):
    """Cleaned files with their content hashes."""

    def files(self) -> list[CleanedFile]:
        """Every cleaned file, sorted by tokenized folder name."""
        ...

    def sha256(self, item: CleanedFile) -> tuple[int, str]:
        """(size, content SHA-256) of one of :meth:`files`."""
        ...

    def save_memo(self) -> None:
        """Keep the hashes computed so far (a no-op where none are kept)."""
        ...


@dataclass
class OwnCleaned:
    """The project's own cleaned files on disk (no adopted roots), hashed when asked."""

    found: list[CleanedFile]

    def files(self) -> list[CleanedFile]:
        return list(self.found)

    def sha256(self, item: CleanedFile) -> tuple[int, str]:
        return item.path.stat().st_size, file_sha256(item.path)

    def save_memo(self) -> None:
        """Nothing is kept: the project's own files are hashed by the steps that read them."""


def adopted_roots(
    locations: Sequence[Location], data_root: Path
) -> AdoptedFolders | AdoptedObjects | None:
    """The adopted cleaned roots (``HRM_ADOPT_CLEANED``), listed now, with the hashes kept in
    ``data_root``'s memo; None when there are none (the cleaned root is ours). Roots are all
    folders or all in object storage (``settings.adopted_cleaned_roots`` refuses a mix)."""
    if not locations:
        return None
    buckets = [root for root in locations if isinstance(root, ObjectRoot)]
    if buckets:
        return AdoptedObjects(buckets, Path(data_root) / OBJECT_MEMO_FILE)
    return AdoptedFolders([Path(root) for root in locations], Path(data_root) / FOLDER_MEMO_FILE)


def cleaned_content(
    locations: Sequence[Location], data_root: Path, cleaned_root: Path
) -> CleanedContent:
    """The adopted roots (:func:`adopted_roots`), or without any the files of our own
    ``cleaned_root``."""
    adopted = adopted_roots(locations, data_root)
    if adopted is not None:
        return adopted
    return OwnCleaned(scan_cleaned_tree(cleaned_root).files)


def in_object_storage(adopted: AdoptedFolders | AdoptedObjects | None) -> bool:
    """Whether the adopted roots are ``s3://`` roots (read by the Rust core where they are)."""
    return isinstance(adopted, AdoptedObjects)


def read_corpus(
    adopted: AdoptedFolders | AdoptedObjects, specs: Iterable[SourceSpec]
) -> AdoptedCorpus:
    """The adopted roots as a corpus: every known source's files (none included) with their
    content hashes, the files of no known source, provenance; the hashes kept in the memo."""
    if isinstance(adopted, AdoptedObjects):
        corpus = adopt_objects(adopted, specs)
    else:
        corpus = adopt_cleaned(adopted.roots, specs, adopted.memo)
    adopted.save_memo()
    return corpus
