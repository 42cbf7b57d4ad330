"""What decides whether a tokenized folder is current: its data version (a hash of the cleaned
file, the tokenizer, the framing and the code version) and the ``metadata.json`` fields a folder
written now records. A folder is reused only when all of them match and it is complete."""

from __future__ import annotations

import json
from pathlib import Path

from hrm_assets import _core
from hrm_assets.common.hashing import file_sha256, value_sha256
from hrm_assets.common.layout import CleanedFile
from hrm_assets.common.manifest import read_manifest, sizes_match
from hrm_assets.contracts.framing import Framing
from hrm_assets.contracts.spans import ARRAY_FILES
from hrm_assets.tokenization.identity import folder_identity_problems
from hrm_assets.tokenization.tokenizer_setup import TokenizerLike, TokenizerSetup, as_setup

# The crate's format version: bumped with any change to what a folder holds
# (docs/ARCHITECTURE.md, "Code versions").
CODE_VERSION = f"hrm-tokenize/{_core.FORMAT_VERSION}"
METADATA_FILE: str = _core.METADATA_FILE
OWNER_MARKER: str = _core.OWNER_MARKER
# Metadata fields that must all match for a folder to be reused.
_VERSION_FIELDS = ("source_sha256", "tokenizer_sha256", "framing", "code_version", "data_version")


def data_version(source_sha256: str, setup: TokenizerSetup) -> str:
    """The data version of a tokenized folder: a hash of everything its bytes depend on."""
    return value_sha256(
        {
            "source_sha256": source_sha256,
            "tokenizer_sha256": setup.tokenizer_sha256,
            "framing": setup.framing_sha256,
            "code_version": CODE_VERSION,
        }
    )


def expected_data_version(
    cleaned: CleanedFile | Path, tokenizer: TokenizerLike, framing: Framing | None = None
) -> str:
    """The data version ``tokenize_file`` would record, computed without tokenizing."""
    path = cleaned.path if isinstance(cleaned, CleanedFile) else Path(cleaned)
    return data_version(file_sha256(path), as_setup(tokenizer, framing))


def read_metadata(folder: Path) -> dict | None:
    """A tokenized folder's ``metadata.json``, or None if absent or unreadable."""
    try:
        value = json.loads((Path(folder) / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def reusable_metadata(folder: Path, expected: dict) -> dict | None:
    """The folder's metadata if the folder is complete, ours, and of the expected version."""
    metadata = read_metadata(folder)
    if not records_version(metadata, expected) or not (folder / OWNER_MARKER).is_file():
        return None
    if not all((folder / name).is_file() for name in ARRAY_FILES):
        return None
    # Complete means as written: a manifest listing exactly the arrays, each of its size.
    if not sizes_match(folder) or sorted(read_manifest(folder)["files"]) != sorted(ARRAY_FILES):
        return None
    # And of this file: metadata naming this folder's cleaned file, counts those of the arrays
    # (another file's arrays under this metadata pass every check above).
    if folder_identity_problems(folder, metadata):
        return None
    return metadata


def expected_metadata(
    source_path: str,
    source_size: int,
    source_mtime: float,
    source_sha256: str,
    setup: TokenizerSetup,
) -> dict:
    """The ``metadata.json`` fields a folder written now from this cleaned file records
    (before the encoder adds its counts); on disk and in object storage alike."""
    return {
        "source_mtime": int(source_mtime),
        "source_size": source_size,
        "source_sha256": source_sha256,
        "source_path": source_path,
        "tokenizer_sha256": setup.tokenizer_sha256,
        "framing": setup.framing_sha256,
        "code_version": CODE_VERSION,
        "data_version": data_version(source_sha256, setup),
    }


def records_version(metadata: dict | None, expected: dict) -> bool:
    """Whether a folder's metadata records the expected versions and its counts: its arrays
    are those a write now would give (whether they are complete is the caller's to check)."""
    return (
        metadata is not None
        and all(metadata.get(key) == expected[key] for key in _VERSION_FIELDS)
        and all(isinstance(metadata.get(key), int) for key in ("rows", "tokens"))
    )


def refreshed_metadata_text(current: dict, expected: dict) -> str | None:
    """``metadata.json`` of a reused folder with data_io's source fields made true again (same
    content, new time or path), or None when nothing changed."""
    stale = {key: value for key, value in expected.items() if current.get(key) != value}
    if not stale:
        return None
    return json.dumps(
        {**current, **stale}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
