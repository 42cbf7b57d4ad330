"""Local working copies of remote roots, kept in the cache (``$HRM_CACHE_DIR``) and refreshed
by ETag: an object is downloaded only when its ETag differs from the one its local copy was
fetched with, so unchanged inputs are never downloaded twice on a machine.

A copy is ``<cache>/<protocol>/<bucket>/<prefix>/`` (``storage.mirror_path``); the ETags of its
files are kept beside it in ``<copy>.etags.json``. Files are replaced atomically (temporary
file, then rename), a refresh holds the copy's lock (``.<copy>.lock`` beside it), and a file
whose object is gone is removed only if the index says this cache downloaded it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hrm_assets.common.atomic import atomic_write_text, exclusive_lock, lock_path_for
from hrm_assets.common.storage import IO_THREADS, ObjectInfo, ObjectRoot, ObjectStore, mirror_path


@dataclass
class MirrorReport:
    """What a refresh did: the listing it followed, files fetched and removed."""

    local: Path
    listing: dict[str, ObjectInfo] = field(default_factory=dict)
    downloaded: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def _index_path(local: Path) -> Path:
    return local.parent / f"{local.name}.etags.json"


def read_index(local: Path) -> dict[str, str]:
    try:
        value = json.loads(_index_path(local).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _write_index(local: Path, index: dict[str, str]) -> None:
    atomic_write_text(_index_path(local), json.dumps(index, sort_keys=True, indent=0))


def refresh_files(
    store: ObjectStore,
    local: Path,
    listing: dict[str, ObjectInfo],
    keep: Callable[[str], bool] = lambda relative: True,
) -> MirrorReport:
    """Make ``local/<relative>`` a copy of each listed object; call with the copy's lock held.

    Only objects whose ETag differs from the index's (or whose local file is gone) are
    downloaded, several at once, each with the object's time as its modification time.
    Files the index knows but the listing no longer has are removed, unless ``keep`` says
    they are outside what this listing covers.
    """
    local = Path(local)
    index = read_index(local)
    report = MirrorReport(local=local, listing=listing)
    wanted = [
        info
        for relative, info in listing.items()
        if index.get(relative) != info.etag or not (local / relative).is_file()
    ]

    def fetch(info: ObjectInfo) -> str:
        store.download(info.relative, local / info.relative, mtime=info.last_modified or None)
        return info.relative

    try:
        if wanted:
            with ThreadPoolExecutor(min(IO_THREADS, len(wanted))) as pool:
                for relative in pool.map(fetch, wanted):
                    index[relative] = listing[relative].etag
                    report.downloaded.append(relative)
        for relative in sorted(set(index) - set(listing)):
            if not keep(relative):
                continue
            (local / relative).unlink(missing_ok=True)
            del index[relative]
            report.removed.append(relative)
    finally:
        _write_index(local, index)
    return report


def note_uploaded(local: Path, store: ObjectStore, relatives: list[str]) -> None:
    """Record in the working copy's index the ETags of objects just uploaded from the copy's
    own files, so that the next refresh does not download what this machine wrote."""
    if not relatives:
        return
    with exclusive_lock(lock_path_for(local)):
        index = read_index(local)
        for relative, info in store.head_many(relatives).items():
            if info is not None and (local / relative).is_file():
                index[relative] = info.etag
        _write_index(local, index)


def mirror_tree(
    root: ObjectRoot, select: Callable[[str], bool] | None = None, local: Path | None = None
) -> MirrorReport:
    """Refresh the local copy of ``root`` (of the objects ``select`` accepts, by relative
    path) and return where it is. Raises naming the bucket if it cannot be listed."""
    store = ObjectStore(root)
    local = Path(local) if local is not None else mirror_path(root)
    listing = store.list()
    if select is not None:
        listing = {relative: info for relative, info in listing.items() if select(relative)}
    local.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(lock_path_for(local)):
        return refresh_files(store, local, listing, keep=select or (lambda relative: True))
