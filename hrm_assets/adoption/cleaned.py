"""Cleaned roots adopted as they are: found, hashed and assigned to sources, never written.

A data_io user starts from cleaned files laid out as data_io writes them, ``data/*.jsonl`` and
``data_clustered/<source>/...parquet`` (two roots: the file's path relative to its root is what
data_io's tokenizer names its folder after, ``flan/x.parquet`` -> ``flan__x.parquet``), often
from the Hugging Face Hub, whose cache keeps every file as a symlink from
``datasets--<org>--<name>/snapshots/<revision>/`` into ``blobs/``. Here, unlike the scan of our
own cleaned root (which skips links, as data_io does), a link to a regular file is that file:
adopting a Hub download means reading through its links. Links to folders are not followed
(said in ``links_skipped``).

Each file's content hash is the data version (never mtimes); a source's version is
:func:`~hrm_assets.common.hashing.entries_sha256` of its files, the formula of the cleaned
asset's own version. A file no known source writes is listed in ``unknown``, never dropped
silently.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.hashing import entries_sha256, file_sha256
from hrm_assets.common.layout import (
    CleanedFile,
    LayoutError,
    add_unique_folder,
    is_cleaned_name,
    is_temporary,
)
from hrm_assets.common.storage import ObjectInfo
from hrm_assets.tokenization.partitioning import files_by_source
from hrm_assets.tokenizer.train import LocalCorpus

# datasets--<org>--<name>/snapshots/<40-hex revision>: where huggingface_hub keeps a download.
_HUB_SNAPSHOT = re.compile(r"datasets--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/(?P<rev>[^/]+)")


@dataclass(frozen=True)
class Provenance:
    """Where an adopted root comes from: a Hub dataset at a revision, or a plain folder."""

    root: str
    hub_id: str | None = None
    revision: str | None = None

    def as_dict(self) -> dict[str, str]:
        found = {"root": self.root}
        if self.hub_id:
            found |= {"hub_id": self.hub_id, "revision": self.revision or ""}
        return found


def provenance_of(root: Path) -> Provenance:
    """The Hub dataset and revision of a root inside a Hub cache snapshot, else the folder."""
    text = Path(root).absolute().as_posix()
    match = _HUB_SNAPSHOT.search(text)
    if match is None:
        return Provenance(root=text)
    return Provenance(root=text, hub_id=f"{match['org']}/{match['name']}", revision=match["rev"])


@dataclass
class AdoptedScan:
    """The cleaned files of the adopted roots, sorted by safe name."""

    files: list[CleanedFile]
    links_skipped: list[Path] = field(default_factory=list)  # folder links, dangling links


def where(item: CleanedFile) -> str:
    """Where an adopted file is, for people: its path, or its URL for an object."""
    return getattr(item, "url", "") or str(item.path)


def scan_adopted(roots: Sequence[Path]) -> AdoptedScan:
    """Every ``.jsonl``/``.parquet`` file under ``roots``, regular or a link to a regular file
    (a Hub cache), ``.tmp-*`` entries left out. Two files of different roots (or spellings)
    with one tokenized folder name raise :class:`LayoutError` naming both; a root that is not a
    folder raises it too."""
    found: dict[str, CleanedFile] = {}
    skipped: list[Path] = []
    for root in roots:
        root = Path(root).absolute()
        if not root.is_dir():
            raise LayoutError(f"{root}: adopted cleaned root is not a directory")
        for folder, subfolders, names in os.walk(root):
            links = [name for name in subfolders if os.path.islink(os.path.join(folder, name))]
            skipped.extend(Path(folder, name) for name in links)
            subfolders[:] = sorted(
                name for name in subfolders if name not in links and not is_temporary(name)
            )
            for name in sorted(names):
                path = Path(folder, name)
                if not is_cleaned_name(name) or is_temporary(name):
                    continue
                if not path.is_file():  # a dangling link
                    skipped.append(path)
                    continue
                add_unique_folder(found, CleanedFile(path=path, root=root), "adopt one of them")
    return AdoptedScan(files=[found[name] for name in sorted(found)], links_skipped=skipped)


def adopted_file(roots: Sequence[Path], spec: SourceSpec, key: str) -> CleanedFile | None:
    """The adopted file of partition ``key`` of ``spec`` (None when it is gone)."""
    for item in scan_adopted(roots).files:
        if item.safe_name == key:
            return item if spec.writes(item.relative) else None
    return None


@dataclass(frozen=True)
class SourceFiles:
    """One source's adopted files and their content version."""

    name: str
    files: list[CleanedFile]
    entries: list[tuple[str, int, str]]  # (relative, size, sha256) per file

    @property
    def version(self) -> str:
        return entries_sha256(self.entries)


def by_source(
    specs: Iterable[SourceSpec], files: Sequence[CleanedFile]
) -> tuple[dict[str, list[CleanedFile]], list[CleanedFile]]:
    """(the files of each source that has some, the files of no known source)."""
    found = files_by_source(specs, files)
    claimed = {item.safe_name for items in found.values() for item in items}
    unknown = [item for item in files if item.safe_name not in claimed]
    return {name: items for name, items in found.items() if items}, unknown


# Where the hashes of adopted files are kept, under our data root (never the adopted roots).
FOLDER_MEMO_FILE = Path(".hrm-build") / "adopted-hashes.json"


class HashMemo:
    """SHA-256 of adopted files, recomputed only when a file's identity changed (device, inode,
    size, modification and change times): a sensor looks at the corpus every minute, and
    hashing gigabytes each time is not an option. The hash, not the stat, is the version."""

    def __init__(self, known: dict[str, list] | None = None):
        self.known: dict[str, list] = dict(known or {})

    def sha256(self, path: Path) -> tuple[int, str]:
        stat = path.stat()  # through a link: the blob's
        identity = [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]
        key = str(path)
        entry = self.known.get(key)
        if entry is not None and entry[:5] == identity:
            return stat.st_size, entry[5]
        digest = file_sha256(path)
        self.known[key] = [*identity, digest]
        return stat.st_size, digest


def source_files(name: str, files: Sequence[CleanedFile], memo: HashMemo) -> SourceFiles:
    entries = []
    for item in files:
        size, digest = memo.sha256(item.path)
        entries.append((item.relative, size, digest))
    return SourceFiles(name=name, files=list(files), entries=entries)


def load_memo(path: Path) -> HashMemo:
    """The memo kept at ``path`` (empty when it is missing or unreadable: everything is then
    hashed again, which is only slower)."""
    from hrm_assets.common.build_record import read_record

    return HashMemo(read_record(path) or {})


def save_memo(path: Path, memo: HashMemo, present: Iterable[CleanedFile]) -> None:
    """Keep the memo's entries of the files still present, atomically."""
    import json

    from hrm_assets.common.atomic import atomic_write_text

    keep = {str(item.path) for item in present}
    memo.known = {key: value for key, value in memo.known.items() if key in keep}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(memo.known, sort_keys=True))


@dataclass
class AdoptedCorpus:
    """Adopted roots read once: every known source's files (sources with none included, as an
    empty output), the files of no known source, the links not followed, and provenance."""

    sources: dict[str, SourceFiles]
    unknown: list[CleanedFile]
    links_skipped: list[Path]
    provenance: list[Provenance]

    def files(self) -> list[CleanedFile]:
        return [item for source in self.sources.values() for item in source.files]

    def unknown_warning(self, limit: int = 5) -> str | None:
        """One line naming the files no known source writes, or None."""
        if not self.unknown:
            return None
        names = ", ".join(where(item) for item in self.unknown[:limit])
        more = f", and {len(self.unknown) - limit} more" if len(self.unknown) > limit else ""
        return (
            f"{len(self.unknown)} adopted file(s) belong to no known source and are not "
            f"tokenized: {names}{more}; declare their source in sources.yaml "
            "(docs/SOURCES.md) or move them out of the adopted roots"
        )


def adopt_cleaned(
    roots: Sequence[Path], specs: Iterable[SourceSpec], memo: HashMemo | None = None
) -> AdoptedCorpus:
    """Scan ``roots`` (:func:`scan_adopted`), assign the files to ``specs`` and hash them."""
    specs = list(specs)
    memo = memo if memo is not None else HashMemo()
    scan = scan_adopted(roots)
    found, unknown = by_source(specs, scan.files)
    sources = {spec.name: source_files(spec.name, found.get(spec.name, []), memo) for spec in specs}
    return AdoptedCorpus(
        sources=sources,
        unknown=unknown,
        links_skipped=scan.links_skipped,
        provenance=[provenance_of(Path(root)) for root in roots],
    )


def file_records(source: SourceFiles) -> list[dict[str, object]]:
    """One record per file of a source: its path as adopted, size and SHA-256."""
    return [
        {"file": where(item), "relative": relative, "bytes": size, "sha256": digest}
        for item, (relative, size, digest) in zip(source.files, source.entries, strict=True)
    ]


class AdoptedFolders:
    """Adopted folders as the tokenized step of a tokenized root in object storage asks for
    its cleaned files (``partition_file``, ``heads``, ``url_of``): the Rust core reads each
    file from disk (through a Hub cache's links) and publishes its folder in the bucket. The
    content hashes come from ``memo_file`` (:class:`HashMemo`): an unchanged file is not read
    to decide that its folder is current."""

    def __init__(self, roots: Sequence[Path], memo_file: Path):
        self.roots = [Path(root) for root in roots]
        self.memo_file = memo_file
        self.memo = load_memo(memo_file)
        self.by_name = {item.safe_name: item for item in scan_adopted(self.roots).files}
        self.local = self.roots[0]

    @property
    def root(self) -> str:
        """The roots, for messages."""
        return ", ".join(str(root) for root in self.roots)

    def partition_file(self, spec: SourceSpec, name: str) -> CleanedFile | None:
        """The file of tokenized partition ``name`` of ``spec`` (None when it is gone)."""
        item = self.by_name.get(name)
        return item if item is not None and spec.writes(item.relative) else None

    def url_of(self, item: CleanedFile) -> str:
        return str(item.path)

    def files(self) -> list[CleanedFile]:
        return list(self.by_name.values())

    def training_corpus(self) -> LocalCorpus:
        """The files as a tokenizer's training corpus (read where they are, never written)."""
        return LocalCorpus(self.files())

    @contextlib.contextmanager
    def read_locally(self, files: Sequence[CleanedFile]) -> Iterator[list[CleanedFile]]:
        """The files themselves: they are on disk already (what ``AdoptedObjects`` downloads
        into a temporary folder for a reader of local files)."""
        yield list(files)

    def sha256(self, item: CleanedFile) -> tuple[int, str]:
        """(size, SHA-256) of the file, hashed unless the memo knows it unchanged."""
        return self.memo.sha256(item.path)

    def save_memo(self) -> None:
        """Keep the hashes of the files still present in ``memo_file``."""
        save_memo(self.memo_file, self.memo, self.by_name.values())

    def heads(self, files: Sequence[CleanedFile]) -> dict[str, ObjectInfo]:
        """Each file as an object would show it: size, modification time, content SHA-256."""
        found = {}
        for item in files:
            size, digest = self.memo.sha256(item.path)
            modified = item.path.stat().st_mtime
            found[item.relative] = ObjectInfo(item.relative, size, "", modified, digest)
        self.save_memo()
        return found
