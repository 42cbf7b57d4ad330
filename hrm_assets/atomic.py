"""Atomic outputs: write to a temporary sibling, then rename into place.

A reader (or the next run after a crash) sees either the old complete output or the new
complete output, never a half-written one. Temporary siblings start with ``.tmp-`` so they are
easy to recognise and clean up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

TMP_PREFIX = ".tmp-"


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_file(path: Path, mode: str = "wb") -> Iterator:
    """Open a temporary file next to ``path``; on success it replaces ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{path.name}.", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_file(path, "wb") as handle:
        handle.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def replace_directory(staged: Path, target: Path) -> None:
    """Move the complete directory ``staged`` to ``target``, replacing any old ``target``.

    ``rename`` cannot replace a non-empty directory, so the old one is first renamed aside and
    deleted afterwards; a crash in between leaves no ``target`` (the work is simply redone).
    """
    staged, target = Path(staged), Path(target)
    retired = None
    if target.exists():
        retired = target.with_name(f"{TMP_PREFIX}retired-{target.name}-{os.getpid()}")
        os.rename(target, retired)
    os.rename(staged, target)
    _fsync_dir(target.parent)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)


@contextlib.contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield an empty staging directory; on success it becomes ``target`` atomically."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{target.name}.", dir=target.parent))
    try:
        yield staged
        replace_directory(staged, target)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Delete ``.tmp-*`` leftovers of crashed runs directly under ``directory``."""
    removed = []
    if not Path(directory).is_dir():
        return removed
    for entry in Path(directory).iterdir():
        if entry.name.startswith(TMP_PREFIX):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed
