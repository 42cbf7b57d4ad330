"""The files of a sampled output besides its arrays: ``metadata.json`` (HRM-Text's
``V1DatasetMeta``, with the token dtype rule it implies) and ``manifest.json`` (size and
SHA-256 of every file HRM-Text reads, :mod:`hrm_assets.common.manifest`)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from hrm_assets.common.atomic import fsync_file
from hrm_assets.common.manifest import (
    KIND_FIELD,
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    SAMPLED_KIND,
    manifest_bytes,
)
from hrm_assets.common.settings import METADATA_FILE
from hrm_assets.sampling.arrays import ManifestEntry


class SampledMetadata(BaseModel):
    """HRM-Text's ``V1DatasetMeta``; field order and defaults fix the bytes of metadata.json."""

    tokenizer_info: dict[str, Any] = {}
    vocab_size: int | None = None
    max_seq_len: int
    total_length: int


def token_dtype(vocab_size: float | None) -> np.dtype:
    """data_io's rule: ``<= 255`` uint8, ``<= 65535`` uint16, otherwise (or unknown) int32."""
    if vocab_size is not None:
        if vocab_size <= np.iinfo(np.uint8).max:
            return np.dtype(np.uint8)
        if vocab_size <= np.iinfo(np.uint16).max:
            return np.dtype(np.uint16)
    return np.dtype(np.int32)


def write_metadata(
    staged: Path,
    tokenizer_info: dict[str, Any],
    context_size: int,
    total_tokens: np.int64,
    epochs: int,
) -> tuple[SampledMetadata, ManifestEntry]:
    """Write ``metadata.json`` into ``staged`` (fsynced); returns it and its manifest entry."""
    # data_io divides an int64 by the epoch count and rounds half to even; so do we.
    metadata = SampledMetadata(
        tokenizer_info=tokenizer_info,
        max_seq_len=context_size,
        total_length=int(round(total_tokens / epochs)),
    )
    metadata_bytes = metadata.model_dump_json().encode("utf-8")
    (staged / METADATA_FILE).write_bytes(metadata_bytes)
    fsync_file(staged / METADATA_FILE)
    entry: ManifestEntry = {
        "sha256": hashlib.sha256(metadata_bytes).hexdigest(),
        "size": len(metadata_bytes),
    }
    return metadata, entry


def write_manifest(staged: Path, entries: dict[str, ManifestEntry]) -> dict[str, Any]:
    """Write ``manifest.json`` listing ``entries`` (paths relative to ``staged``), fsynced;
    returns the manifest."""
    manifest = {
        "files": dict(sorted(entries.items())),
        "format": MANIFEST_FORMAT,
        KIND_FIELD: SAMPLED_KIND,
    }
    (staged / MANIFEST_FILE).write_bytes(manifest_bytes(manifest))
    fsync_file(staged / MANIFEST_FILE)
    return manifest
