"""Tokenized folders in object storage: the same folders, bytes and skip rules as
``tokenize.py`` writes on disk, for a tokenized root that is an ``s3://`` URL.

The Rust core publishes each folder ``<root>/<safe name>/`` by this commit protocol
(docs/STORAGE.md):

1. DELETE ``manifest.json`` (a reader now takes the folder as absent);
2. PUT the ownership marker ``.hrm-data``, alone, so whatever a killed writer leaves is ours to
   rewrite;
3. PUT the arrays, ``metadata.json`` and the contamination sidecars
   (``contamination/sidecar.py``; a previous write's are deleted in step 1 when there are none);
4. PUT ``manifest.json`` last.

A folder is complete only when its ``manifest.json`` lists exactly the five arrays and the
listing shows each with the manifest's size, and it carries the marker; anything else is absent
(a writer killed at any moment leaves a folder that no reader takes, and that the next run
rewrites). Deciding whether a folder is current reads its ``metadata.json`` and
``manifest.json`` (two small GETs) and the cleaned object's stored SHA-256 (a HEAD): the data is
never read to skip it. Only folders carrying the marker are ever deleted.

Object storage has no lock: two writers of one folder are kept apart by Dagster, which runs one
materialization of a partition at a time, and by ``hrm-tokenize``'s users not pointing two
commands at one root (docs/STORAGE.md says what a second writer could cause).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.cleaning.source_files import listed_cleaned_files
from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.atomic import exclusive_lock, lock_path_for
from hrm_assets.common.layout import (
    CleanedFile,
    LayoutError,
    is_temporary,
)
from hrm_assets.common.manifest import MANIFEST_FILE
from hrm_assets.common.object_mirror import refresh_files
from hrm_assets.common.settings import TOKENIZER_INFO_FILE
from hrm_assets.common.storage import (
    IO_THREADS,
    ObjectInfo,
    ObjectRoot,
    ObjectStore,
    mirror_path,
    remote_tree_sha256,
    storage_options,
)
from hrm_assets.contamination.sidecar import KEYS_FILE, SCAN_FILE
from hrm_assets.contracts.cleaned_provenance import PROVENANCE_FILE
from hrm_assets.contracts.framing import tokenizer_info_json
from hrm_assets.tokenization.outcomes import written_outcome
from hrm_assets.tokenization.partitioning import relative_paths_for
from hrm_assets.tokenization.tokenize import (
    ARRAY_FILES,
    CHUNK_FILES,
    METADATA_FILE,
    OWNER_MARKER,
    ForeignOutputError,
    TokenizeFailure,
    TokenizeOutcome,
    TokenizerSetup,
    expected_metadata,
    records_version,
    refreshed_metadata_text,
    reused_outcome,
)


@dataclass
class RemoteCleaned:
    """A cleaned root in object storage, as one listing: its files appear as
    :class:`CleanedFile` at their place in the local working copy (``local``), which holds
    only what has been downloaded."""

    root: ObjectRoot
    store: ObjectStore
    local: Path
    listing: dict[str, ObjectInfo]

    @classmethod
    def scan(cls, root: ObjectRoot) -> RemoteCleaned:
        store = ObjectStore(root)
        return cls(root, store, mirror_path(root), store.list())

    def files(self) -> list[CleanedFile]:
        """Every cleaned object (data_io's names, no ``.tmp-`` entries), sorted by safe name;
        :class:`LayoutError` if two map to one folder."""
        return listed_cleaned_files(self.root, self.local, self.listing)

    def partition_file(self, spec: SourceSpec, name: str) -> CleanedFile | None:
        """The remote counterpart of ``partitioning.partition_file``."""
        present = [
            relative
            for relative in relative_paths_for(name)
            if not is_temporary(relative) and relative in self.listing
        ]
        if len(present) > 1:
            raise LayoutError(
                f"{self.root.join(present[0])} and {self.root.join(present[1])} both map to "
                f"the tokenized folder {name!r}; rename one of them"
            )
        if not present or not spec.writes(present[0]):
            return None
        return CleanedFile(path=self.local / present[0], root=self.local)

    def url_of(self, item: CleanedFile) -> str:
        """The URL the Rust core reads the file from."""
        return str(self.root.join(item.relative))

    def info_of(self, item: CleanedFile) -> ObjectInfo:
        """The file's object as listed."""
        return self.listing[item.relative]

    @contextlib.contextmanager
    def read_locally(self, files: Sequence[CleanedFile]) -> Iterator[list[CleanedFile]]:
        """The files downloaded into a temporary folder (for a reader of files on disk: the
        contamination report's rescans), removed afterwards."""
        with tempfile.TemporaryDirectory(prefix=".tmp-hrm-cleaned-") as folder:
            for item in files:
                self.store.download(item.relative, Path(folder) / item.relative)
            yield [
                CleanedFile(path=Path(folder) / item.relative, root=Path(folder)) for item in files
            ]

    def heads(self, files: Sequence[CleanedFile]) -> dict[str, ObjectInfo]:
        """Each file's object with its stored SHA-256 (one HEAD each, several at once)."""
        found = self.store.head_many(item.relative for item in files)
        missing = [relative for relative, info in found.items() if info is None]
        if missing:
            raise FileNotFoundError(f"{self.root.join(missing[0])}: gone since it was listed")
        return found  # type: ignore[return-value]

    def content_version(self, files: Sequence[CleanedFile]) -> str:
        """``tree_sha256`` of these files, from their stored hashes (no data read)."""
        return remote_tree_sha256(self.heads(files).values())


def complete_manifest(folder: dict[str, ObjectInfo], manifest: bytes | None) -> dict | None:
    """The folder's manifest if the folder is complete: the marker is there, and the manifest
    lists exactly the arrays, each listed with the manifest's size. ``folder`` maps the names
    inside the folder to their objects."""
    if manifest is None or OWNER_MARKER not in folder:
        return None
    try:
        value = json.loads(manifest)
        files = value["files"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(files, dict) or sorted(files) != sorted(ARRAY_FILES):
        return None
    for name, entry in files.items():
        if name not in folder or not isinstance(entry, dict):
            return None
        if folder[name].size != entry.get("size"):
            return None
    return value


def folders_of(listing: dict[str, ObjectInfo]) -> dict[str, dict[str, ObjectInfo]]:
    """A tokenized root's listing grouped by task folder: ``{safe name: {file name: info}}``."""
    folders: dict[str, dict[str, ObjectInfo]] = {}
    for relative, info in listing.items():
        folder, _, name = relative.partition("/")
        if name:
            folders.setdefault(folder, {})[name] = info
    return folders


class RemoteTokenized:
    """A tokenized root in object storage."""

    def __init__(self, root: ObjectRoot):
        self.root = root
        self.store = ObjectStore(root)

    def folders(self) -> dict[str, dict[str, ObjectInfo]]:
        return folders_of(self.store.list())

    def write_tokenizer_info(self, setup: TokenizerSetup) -> int:
        """PUT ``tokenizer_info.json`` with data_io's bytes if they changed; its vocab size."""
        info = setup.framing.tokenizer_info(setup.given_path, setup.encoder().vocab_size)
        text = tokenizer_info_json(info)
        if self.store.get_bytes(TOKENIZER_INFO_FILE) != text.encode("utf-8"):
            self.store.put_bytes(TOKENIZER_INFO_FILE, text.encode("utf-8"))
        return info["vocab_size"]

    def remove_owned(self, safe_name: str, folder: dict[str, ObjectInfo] | None = None) -> bool:
        """Delete the folder if it carries the marker (manifest first, so it is absent at
        once; the marker last, so a killed delete is finished by the next one)."""
        if folder is None:
            folder = folders_of(self.store.list(safe_name)).get(safe_name, {})
        if OWNER_MARKER not in folder:
            return False
        names = sorted(folder, key=lambda name: (name != MANIFEST_FILE, name == OWNER_MARKER))
        for name in names:
            self.store.delete([f"{safe_name}/{name}"])
        return True

    def read_back(self, safe_names: Sequence[str]) -> Path:
        """Download these folders (as they are now in the bucket) into the working copy of the
        root, under its lock; returns the copy's path."""
        local = mirror_path(self.root)
        wanted = {}
        # One listing a folder, several at once: a chunk's folders are a round trip deep.
        for listing in _map(self.store.list, list(safe_names)):
            wanted.update(listing)
        local.mkdir(parents=True, exist_ok=True)
        names = set(safe_names)
        with mirror_lock(local):
            # A file of these folders the bucket no longer has (the sidecars of a write before
            # one without them) leaves the copy too.
            refresh_files(
                self.store, local, wanted, keep=lambda relative: relative.split("/")[0] in names
            )
        return local


def refuse_foreign_remote(root: ObjectRoot, safe_name: str, folder: dict[str, ObjectInfo]) -> None:
    """:class:`ForeignOutputError` if objects this project did not write are in the way."""
    if folder and OWNER_MARKER not in folder:
        raise ForeignOutputError(
            f"{root.join(safe_name)}/: objects that hrm-tokenize did not write (no "
            f"{OWNER_MARKER} marker) are in the way of this output; they are left as they are"
        )


def _expected_metadata(cleaned: CleanedFile, info: ObjectInfo, setup: TokenizerSetup) -> dict:
    if info.sha256 is None:
        raise ValueError(
            f"{cleaned.relative}: the cleaned object has no stored SHA-256 (x-amz-meta-sha256); "
            "rematerialize its cleaned asset"
        )
    return expected_metadata(cleaned.relative, info.size, info.last_modified, info.sha256, setup)


def _load_json(data: bytes | None) -> dict | None:
    try:
        value = json.loads(data) if data is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _current_metadata(
    out: RemoteTokenized, folders: dict[str, dict[str, ObjectInfo]], names: list[str]
) -> dict[str, dict | None | OSError]:
    """Each named folder's ``metadata.json`` if the folder is complete (else None), or the
    error reading it: manifests, then metadata, fetched several at once (a no-op over
    thousands of folders is then a few round trips deep, not two per folder)."""

    def fetch(relative: str) -> bytes | None | OSError:
        try:
            return out.store.get_bytes(relative)
        except OSError as error:
            return error

    owned = [name for name in names if OWNER_MARKER in folders.get(name, {})]
    manifests = _map(fetch, [f"{name}/{MANIFEST_FILE}" for name in owned])
    found: dict[str, dict | None | OSError] = dict.fromkeys(names)
    complete = []
    for name, manifest in zip(owned, manifests, strict=True):
        if isinstance(manifest, OSError):
            found[name] = manifest
        elif complete_manifest(folders[name], manifest):
            complete.append(name)
    metadata = _map(fetch, [f"{name}/{METADATA_FILE}" for name in complete])
    for name, data in zip(complete, metadata, strict=True):
        found[name] = data if isinstance(data, OSError) else _load_json(data)
    return found


def tokenize_remote(
    files: Sequence[CleanedFile],
    cleaned: RemoteCleaned,
    out: RemoteTokenized,
    setup: TokenizerSetup,
    threads: int | None = None,
) -> Iterator[TokenizeOutcome | TokenizeFailure]:
    """Tokenize remote cleaned files into remote folders, skipping current ones, as
    ``tokenize_files`` does on disk. A written folder's outcome names its copy read back into
    the working copy (``output_dir``, for the checks); a reused one's names none (``None``)."""
    setup.encoder()
    heads = cleaned.heads(files)
    folders = out.folders()
    ordered = sorted(files, key=lambda item: item.safe_name)
    currents = _current_metadata(out, folders, [item.safe_name for item in ordered])
    planned: list[tuple[CleanedFile, dict]] = []
    for item in ordered:
        current = currents[item.safe_name]
        try:
            refuse_foreign_remote(out.root, item.safe_name, folders.get(item.safe_name, {}))
            expected = _expected_metadata(item, heads[item.relative], setup)
            if isinstance(current, OSError):
                raise current
        except (ValueError, OSError) as error:
            yield TokenizeFailure(item.safe_name, error)
            continue
        if not records_version(current, expected):
            planned.append((item, expected))
            continue
        refreshed = refreshed_metadata_text(current, expected)
        if refreshed is not None:
            out.store.put_bytes(f"{item.safe_name}/{METADATA_FILE}", refreshed.encode("utf-8"))
        yield reused_outcome(item.safe_name, current, expected, None)
    if planned:
        yield from _write_planned(planned, cleaned, out, setup, threads)


def _write_planned(
    planned: list[tuple[CleanedFile, dict]],
    cleaned: RemoteCleaned,
    out: RemoteTokenized,
    setup: TokenizerSetup,
    threads: int | None,
) -> Iterator[TokenizeOutcome | TokenizeFailure]:
    """Hand the planned files to the Rust core as URL jobs, chunk by chunk: it reads each
    cleaned object and publishes its folder by the commit protocol, with the local writer's
    bytes. Each written folder is then read back into the working copy of the tokenized root
    (the outcome's ``output_dir``), where the checks verify what the bucket now holds."""
    options = storage_options(out.root)
    for start in range(0, len(planned), CHUNK_FILES):
        chunk = planned[start : start + CHUNK_FILES]
        jobs = [
            (
                cleaned.url_of(item),
                str(out.root.join(item.safe_name)),
                json.dumps(metadata),
            )
            for item, metadata in chunk
        ]
        # Contamination and duplicates in the same read, their sidecars published with the
        # folder (contamination/sidecar.py).
        from hrm_assets.common.settings import data_root
        from hrm_assets.contamination.tokenization_index import scan_options

        written = setup.encoder().tokenize_files(
            jobs, num_threads=threads, storage_options=options, **scan_options(data_root())
        )
        done = [
            (item, metadata, result)
            for (item, metadata), result in zip(chunk, written, strict=True)
            if not isinstance(result, Exception)
        ]
        for (item, _), result in zip(chunk, written, strict=True):
            if isinstance(result, Exception):
                yield TokenizeFailure(item.safe_name, result)
        local = out.read_back([item.safe_name for item, _, _ in done])
        for item, metadata, result in done:
            yield written_outcome(item.safe_name, metadata, result, local / item.safe_name)


# The root's own files a working copy holds: data_io's tokenizer_info.json and the record of
# the cleaned corpus the folders were made from (adoption; the data card reads it).
ROOT_FILES = (TOKENIZER_INFO_FILE, PROVENANCE_FILE)


def mirror_tokenized(root: ObjectRoot, local: Path | None = None) -> Path:
    """Refresh the local working copy of a remote tokenized root for the sampler and return
    it: :data:`ROOT_FILES` and every complete folder (by the rules above; incomplete ones
    are absent here too). Files are fetched only when their ETag changed; folders no longer
    complete remotely are removed from the copy. Call it, and read the copy, with
    :func:`mirror_lock` held."""
    out = RemoteTokenized(root)
    listing = out.store.list()
    folders = folders_of(listing)
    manifests = dict(
        zip(
            folders,
            _map(lambda name: out.store.get_bytes(f"{name}/{MANIFEST_FILE}"), list(folders)),
            strict=True,
        )
    )
    complete = {
        name for name, folder in folders.items() if complete_manifest(folder, manifests[name])
    }
    wanted = {
        relative: info
        for relative, info in listing.items()
        if relative in ROOT_FILES or relative.partition("/")[0] in complete
    }
    local = Path(local) if local is not None else mirror_path(root)
    local.mkdir(parents=True, exist_ok=True)
    refresh_files(out.store, local, wanted)
    for entry in local.iterdir():
        if entry.is_dir() and not entry.name.startswith(".") and entry.name not in complete:
            shutil.rmtree(entry)
    return local


def mirror_folder_files(root: ObjectRoot, names: Sequence[str]) -> tuple[Path, set[str]]:
    """Refresh the working copy of a tokenized root with the files ``names`` of each folder
    carrying the marker (the contamination report's: manifest, metadata, sidecars; not the
    arrays), only those whose ETag changed downloaded; the copy and the folders complete by
    :func:`complete_manifest`. Call it, and read the copy, with :func:`mirror_lock` held."""
    store = ObjectStore(root)
    listing = store.list()
    folders = folders_of(listing)

    def named(relative: str) -> bool:
        return relative.partition("/")[2] in names

    wanted = {
        relative: info
        for relative, info in listing.items()
        if named(relative) and OWNER_MARKER in folders[relative.partition("/")[0]]
    }
    local = mirror_path(root)
    local.mkdir(parents=True, exist_ok=True)
    # Only the named files are this refresh's: the arrays a sampler fetched stay as they are.
    refresh_files(store, local, wanted, keep=named)
    complete = {
        name
        for name, folder in folders.items()
        if f"{name}/{MANIFEST_FILE}" in wanted
        and complete_manifest(folder, (local / name / MANIFEST_FILE).read_bytes())
    }
    return local, complete


SIDECAR_FILES = (SCAN_FILE, KEYS_FILE)


def mirror_sidecars(root: ObjectRoot, safe_names: Sequence[str]) -> Path:
    """Refresh the contamination sidecars of these folders (not their arrays) into the working
    copy of the root, only those whose ETag changed downloaded and those gone from the bucket
    removed from the copy; the copy's path. For a folder reused without being downloaded,
    whose partition record still shows what its sidecars say."""
    store = ObjectStore(root)
    names = set(safe_names)

    def is_sidecar(relative: str) -> bool:
        folder, _, name = relative.partition("/")
        return folder in names and name in SIDECAR_FILES

    wanted = {
        relative: info
        for listing in _map(store.list, sorted(names))
        for relative, info in listing.items()
        if is_sidecar(relative)
    }
    local = mirror_path(root)
    local.mkdir(parents=True, exist_ok=True)
    with mirror_lock(local):
        refresh_files(store, local, wanted, keep=is_sidecar)
    return local


def mirror_lock(local: Path):
    """The lock of a working copy: held while it is refreshed and read."""
    return exclusive_lock(lock_path_for(Path(local)))


def _map(function, items: list) -> list:
    if not items:
        return []
    with ThreadPoolExecutor(min(IO_THREADS, len(items))) as pool:
        return list(pool.map(function, items))
