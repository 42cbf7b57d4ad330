"""Cleaned roots in object storage (``s3://bucket/prefix``), adopted as they are: listed, hashed
and assigned to sources, never copied or written.

A corpus someone else uploaded carries no SHA-256 of ours (``x-amz-meta-sha256``), and its ETag
is no content hash (a multipart upload's ETag hashes the parts' MD5s, and depends on the part
size). So each object's bytes are hashed once, in one streaming pass, and the hash is kept with
the listing's ``(size, ETag, last modified)`` of the object: a later look whose listing shows
the same three for the same key reuses the hash instead of reading the data again.

An object appears as a :class:`CleanedFile` at its place in the root's working-copy path (as
``tokenization.remote.RemoteCleaned`` shows its files: nothing is downloaded there), with its
URL beside it (:class:`AdoptedObject`). :class:`AdoptedObjects` also answers what the
tokenized step asks of cleaned objects (``partition_file``, ``heads``, ``url_of``,
``storage_options``), so the files are tokenized by the Rust core reading each object from the
bucket, into a tokenized root in object storage or on disk, and a folder is judged current
from the kept hash (an unchanged object is not read).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.adoption.cleaned import AdoptedCorpus, Provenance, SourceFiles, by_source
from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.layout import CleanedFile, LayoutError, is_cleaned_name, is_temporary
from hrm_assets.common.storage import (
    ObjectInfo,
    ObjectRoot,
    ObjectStore,
    mirror_path,
    named_errors,
    storage_options,
)

# Where the hashes of adopted objects are kept, under the data root.
OBJECT_MEMO_FILE = Path(".hrm-build") / "adopted-object-hashes.json"

READ_BYTES = 8 << 20  # one streaming read of an object


@dataclass(frozen=True)
class AdoptedObject(CleanedFile):
    """A cleaned file that is an object: ``path`` under the root's working-copy path (never
    written), ``url`` where it is."""

    url: str = ""


def object_sha256(store: ObjectStore, relative: str) -> str:
    """SHA-256 of an object's bytes, read once from start to end."""
    digest = hashlib.sha256()
    with named_errors(store.root, f"reading {store.root.join(relative)}"):
        with store.fs.open(f"{store.root.path}/{relative}", "rb", block_size=READ_BYTES) as data:
            while chunk := data.read(READ_BYTES):
                digest.update(chunk)
    return digest.hexdigest()


def _identity(info: ObjectInfo) -> list:
    return [info.size, info.etag, info.last_modified]


class ObjectHashMemo:
    """SHA-256 of adopted objects by URL, with the ``(size, ETag, last modified)`` they were
    hashed at; an object whose listing shows other values is hashed again."""

    def __init__(self, known: dict[str, list] | None = None):
        self.known: dict[str, list] = dict(known or {})
        self.hashed: list[str] = []  # URLs whose bytes were read by this memo

    def sha256(self, store: ObjectStore, info: ObjectInfo) -> str:
        url = str(store.root.join(info.relative))
        entry = self.known.get(url)
        if entry is not None and entry[:3] == _identity(info):
            return entry[3]
        digest = object_sha256(store, info.relative)
        self.known[url] = [*_identity(info), digest]
        self.hashed.append(url)
        return digest


def load_object_memo(path: Path) -> ObjectHashMemo:
    """The memo kept at ``path`` (empty when missing or unreadable: only slower)."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        value = {}
    return ObjectHashMemo(value if isinstance(value, dict) else {})


def save_object_memo(path: Path, memo: ObjectHashMemo, present: Iterable[AdoptedObject]) -> None:
    """Keep the memo's entries of the objects still listed, atomically."""
    from hrm_assets.common.atomic import atomic_write_text

    keep = {item.url for item in present}
    memo.known = {url: entry for url, entry in memo.known.items() if url in keep}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(path), json.dumps(memo.known, sort_keys=True))


class AdoptedObjects:
    """Adopted object-storage roots, listed once; their cleaned objects hashed on demand. With
    ``memo_file``, the hashes are read from it and kept there after each hashing pass."""

    def __init__(self, roots: Sequence[ObjectRoot], memo_file: Path | None = None):
        self.roots = list(roots)
        self.memo_file = memo_file
        self.memo = load_object_memo(memo_file) if memo_file is not None else ObjectHashMemo()
        self.stores = {root.url: ObjectStore(root) for root in self.roots}
        self.listings = {url: store.list() for url, store in self.stores.items()}
        self.by_name = self._scan()
        self.local = mirror_path(self.roots[0])

    def _scan(self) -> dict[str, AdoptedObject]:
        found: dict[str, AdoptedObject] = {}
        for root in self.roots:
            local = mirror_path(root)
            for relative in self.listings[root.url]:
                if not is_cleaned_name(relative.rsplit("/", 1)[-1]) or is_temporary(relative):
                    continue
                item = AdoptedObject(
                    path=local / relative, root=local, url=str(root.join(relative))
                )
                earlier = found.setdefault(item.safe_name, item)
                if earlier is not item:
                    raise LayoutError(
                        f"{earlier.url} and {item.url} both map to the tokenized folder "
                        f"{item.safe_name!r}; adopt one of them"
                    )
        return {name: found[name] for name in sorted(found)}

    @property
    def root(self) -> str:
        """The roots, for messages."""
        return ", ".join(root.url for root in self.roots)

    def files(self) -> list[AdoptedObject]:
        return list(self.by_name.values())

    def _root_of(self, item: CleanedFile) -> ObjectRoot:
        return next(root for root in self.roots if mirror_path(root) == item.root)

    def url_of(self, item: CleanedFile) -> str:
        return str(self._root_of(item).join(item.relative))

    def storage_options(self) -> dict[str, str]:
        """What the Rust core needs to read the objects where they are."""
        return storage_options(self.roots[0])

    def info_of(self, item: CleanedFile) -> ObjectInfo:
        """The object's listing (size, ETag, last modified)."""
        return self.listings[self._root_of(item).url][item.relative]

    def sha256(self, item: CleanedFile) -> tuple[int, str]:
        """(size, SHA-256) of the object, hashed unless the memo knows it unchanged."""
        root = self._root_of(item)
        info = self.listings[root.url][item.relative]
        return info.size, self.memo.sha256(self.stores[root.url], info)

    def partition_file(self, spec: SourceSpec, name: str) -> AdoptedObject | None:
        """The object of tokenized partition ``name`` of ``spec`` (None when it is gone)."""
        item = self.by_name.get(name)
        return item if item is not None and spec.writes(item.relative) else None

    @contextlib.contextmanager
    def read_locally(self, files: Sequence[CleanedFile]) -> Iterator[list[CleanedFile]]:
        """The objects downloaded into a temporary folder for a reader of local files (the
        rows check), removed afterwards."""
        with tempfile.TemporaryDirectory(prefix=".tmp-hrm-adopted-") as folder:
            copies = []
            for item in files:
                root = self._root_of(item)
                self.stores[root.url].download(item.relative, Path(folder) / item.relative)
                copies.append(CleanedFile(path=Path(folder) / item.relative, root=Path(folder)))
            yield copies

    def heads(self, files: Sequence[CleanedFile]) -> dict[str, ObjectInfo]:
        """Each file's object as listed, with its content SHA-256 (what the remote tokenized
        step takes from a HEAD of an object we wrote)."""
        found = {}
        for item in files:
            size, digest = self.sha256(item)
            found[item.relative] = dataclasses.replace(self.info_of(item), sha256=digest)
        self.save_memo()
        return found

    def save_memo(self) -> None:
        """Keep the hashes in ``memo_file`` (when there is one and some were computed)."""
        if self.memo_file is not None and self.memo.hashed:
            save_object_memo(self.memo_file, self.memo, self.files())

    def training_corpus(self) -> ObjectCorpus:
        """The objects as a tokenizer's training corpus; hashes computed for it are kept."""
        return ObjectCorpus(self, self.save_memo)


def adopt_objects(objects: AdoptedObjects, specs: Iterable[SourceSpec]) -> AdoptedCorpus:
    """The corpus of adopted object roots: every known source's objects (none included) with
    their content hashes, the objects of no known source, and each root as provenance."""
    specs = list(specs)
    found, unknown = by_source(specs, objects.files())
    sources = {}
    for spec in specs:
        files = found.get(spec.name, [])
        entries = [(item.relative, *objects.sha256(item)) for item in files]
        sources[spec.name] = SourceFiles(name=spec.name, files=files, entries=entries)
    return AdoptedCorpus(
        sources=sources,
        unknown=unknown,
        links_skipped=[],
        provenance=[Provenance(root=root.url) for root in objects.roots],
    )


@dataclass(frozen=True)
class ObjectCorpus:
    """Adopted objects as a tokenizer's training corpus (``tokenizer.train.TrainingCorpus``):
    entries from their content hashes, the files downloaded only to train."""

    objects: AdoptedObjects
    after_hashing: Callable[[], None] = lambda: None  # keeps the hashes (a memo file)

    def entries(self) -> list[tuple[str, int, str]]:
        found = [(item.safe_name, *self.objects.sha256(item)) for item in self.objects.files()]
        self.after_hashing()
        return found

    def opened(self) -> contextlib.AbstractContextManager[list[CleanedFile]]:
        return self.objects.read_locally(self.objects.files())
