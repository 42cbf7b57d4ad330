"""Content hashes: the basis of every data version (never mtimes)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def tree_sha256(root: Path, files: Iterable[Path] | None = None) -> str:
    """Hash over sorted relative names, sizes and content digests of files under ``root``."""
    root = Path(root)
    paths = files if files is not None else (p for p in root.rglob("*") if p.is_file())
    return entries_sha256(
        (Path(path).relative_to(root).as_posix(), Path(path).stat().st_size, file_sha256(path))
        for path in paths
    )


def entries_sha256(entries: Iterable[tuple[str, int, str]]) -> str:
    """:func:`tree_sha256` of files known by ``(relative POSIX name, size, SHA-256)``: the
    formula once, for files on disk and for objects whose digests are stored with them."""
    digest = hashlib.sha256()
    for relative, size, sha256 in sorted(entries, key=lambda entry: PurePosixPath(entry[0])):
        digest.update(f"{relative}\0{size}\0{sha256}\n".encode())
    return digest.hexdigest()


def value_sha256(value: object) -> str:
    """Stable hash of a JSON-serialisable value (keys sorted)."""
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def listing_sha256(root: Path) -> str:
    """Hash of the names, sizes and mtimes of every file under ``root`` (cheap; for detecting
    that an output we wrote was touched, never for versioning inputs)."""
    root = Path(root)
    entries = sorted(
        (path.relative_to(root).as_posix(), path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file()
    )
    return value_sha256(entries)
