"""Cleaned objects in object storage tokenized into folders on disk (an ``s3://`` corpus adopted
on a machine whose tokenized root is a local folder).

The Rust core reads each object from the bucket (nothing is copied, nothing written there) and
writes the folder as ``chunks.tokenize_files`` does for a file on disk: the same arrays,
manifest, marker and sidecars, under the folder's lock. Whether a folder is current is decided
from the object's content hash as its cleaned root reports it (``heads``; for adopted objects
the hash kept by key, size, ETag and last modified), so an unchanged object is not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.layout import CleanedFile
from hrm_assets.common.storage import ObjectInfo
from hrm_assets.tokenization.chunks import (
    CHUNK_FILES,
    reuse_or_metadata,
    tokenize_locked_chunk,
)
from hrm_assets.tokenization.outcomes import TokenizeFailure, TokenizeOutcome
from hrm_assets.tokenization.output_folders import refuse_foreign
from hrm_assets.tokenization.tokenizer_setup import TokenizerSetup
from hrm_assets.tokenization.versions import expected_metadata


class CleanedObjects(Protocol):
    """What is asked of cleaned objects (``adoption.objects.AdoptedObjects``)."""

    local: Path  # where their files appear (nothing downloaded there)

    @property
    def root(self) -> object:
        """Where they are, for messages."""
        ...

    def partition_file(self, spec: SourceSpec, name: str) -> CleanedFile | None:
        """The object of tokenized partition ``name`` of ``spec`` (None when it is gone)."""
        ...

    def storage_options(self) -> dict[str, str]:
        """What the Rust core needs to reach their bucket."""
        ...

    def heads(self, files: Sequence[CleanedFile]) -> dict[str, ObjectInfo]:
        """Each file's object by relative path, with its content SHA-256."""
        ...

    def url_of(self, item: CleanedFile) -> str:
        """The URL the Rust core reads the object from."""
        ...


def tokenize_objects(
    files: Sequence[CleanedFile],
    cleaned: CleanedObjects,
    out_root: Path,
    setup: TokenizerSetup,
    storage: Mapping[str, str],
    threads: int | None = None,
) -> Iterator[TokenizeOutcome | TokenizeFailure]:
    """Tokenize cleaned objects into ``out_root/<safe name>/``, skipping current folders:
    one outcome or failure per file, chunk by chunk in name order. ``storage`` is what the
    Rust core needs to reach the bucket (``common.storage.storage_options``)."""
    setup.encoder()
    out_root = Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    ordered = sorted(files, key=lambda item: item.safe_name)
    for start in range(0, len(ordered), CHUNK_FILES):
        chunk = ordered[start : start + CHUNK_FILES]
        try:
            heads = cleaned.heads(chunk)
        except OSError as error:
            yield from (TokenizeFailure(item.safe_name, error) for item in chunk)
            continue
        yield from _tokenize_chunk(chunk, heads, cleaned, out_root, setup, storage, threads)


def _tokenize_chunk(
    chunk: Sequence[CleanedFile],
    heads: Mapping[str, ObjectInfo],
    cleaned: CleanedObjects,
    out_root: Path,
    setup: TokenizerSetup,
    storage: Mapping[str, str],
    threads: int | None,
) -> list[TokenizeOutcome | TokenizeFailure]:
    def plan(item: CleanedFile, folder: Path) -> TokenizeOutcome | dict:
        return _reuse_or_plan(item, heads[item.relative], folder, setup)

    def encode(planned: list[tuple[CleanedFile, dict]]) -> list:
        jobs = [
            (cleaned.url_of(item), str(out_root / item.safe_name), json.dumps(metadata))
            for item, metadata in planned
        ]
        # Contamination and duplicates in the same read, as for files on disk (chunks.py).
        from hrm_assets.common.settings import data_root
        from hrm_assets.contamination.tokenization_index import scan_options

        return setup.encoder().tokenize_files(
            jobs, num_threads=threads, storage_options=dict(storage), **scan_options(data_root())
        )

    return tokenize_locked_chunk(chunk, out_root, plan, encode)


def _reuse_or_plan(
    cleaned: CleanedFile, info: ObjectInfo, folder: Path, setup: TokenizerSetup
) -> TokenizeOutcome | dict:
    """The outcome of reusing ``folder`` if it is current, else the metadata to write it with.
    Call with the folder's lock held."""
    refuse_foreign(folder)
    if info.sha256 is None:
        raise ValueError(f"{cleaned.relative}: the cleaned object's content hash is unknown")
    metadata = expected_metadata(
        cleaned.relative, info.size, info.last_modified, info.sha256, setup
    )
    return reuse_or_metadata(cleaned.safe_name, folder, metadata)
