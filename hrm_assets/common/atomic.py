"""Atomic outputs: write to a temporary sibling, then rename into place; one writer at a time.

A reader (or the next run after a crash) sees either the old complete output or the new
complete output, never a half-written one. Temporary siblings start with ``.tmp-`` so they are
easy to recognise and clean up.

Leftovers of killed writers (docs/RELIABILITY.md, "stale temporaries"):

- Every writer of an output holds its lock (:func:`exclusive_lock` on :func:`lock_path_for`),
  so a writer that holds it knows that the output's own leftovers (:func:`leftovers_of`: the
  exact names this module and the Rust writer give staged and retired copies) belong to writers
  that died, and removes them (:func:`remove_leftovers`). This is how every run cleans up after
  a crash of the previous run on the same output, on any host that shares the lock.
- :func:`remove_stale_temporaries` sweeps the entries of a folder whose names are this
  project's own temporary names (:func:`is_own_temporary`: ``.tmp-`` plus this module's 12-hex
  suffix or the Rust writer's ``<pid>.<nanos>.<count>``) and whose newest write is older than a
  threshold (default one day), for outputs that no later run touches. Any other ``.tmp-*``
  name (a user's ``.tmp-notes``) is never touched. Process ids in names are not trusted: on a
  shared filesystem the writer may be alive on another host, and ids are reused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from hrm_assets.common.writeback import WritebackFile

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

TMP_PREFIX = ".tmp-"
LOCK_SUFFIX = ".lock"
# A leftover with no write for this long belongs to no live writer (default of the sweep).
STALE_AFTER_SECONDS = 24 * 3600.0
# An AtomicGroup file this large is synced as soon as it is closed (AtomicGroup.close).
EARLY_SYNC_BYTES = 16 * 1024 * 1024
# Why a reader may be unable to create a lock file: a read-only filesystem or folder.
_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _create_unique(parent: Path, prefix: str, create: Callable[[Path], object]) -> tuple:
    """``create(parent / (prefix + random suffix))`` for a name not taken yet; returns what it
    returned and the path.

    Unlike ``tempfile.mkstemp``/``mkdtemp`` (modes 0600/0700), ``create`` passes the ordinary
    modes 0666/0777, which the kernel masks with the umask: what is renamed into place is as
    readable as any file the user writes (0644/0755 under umask 022), by a training job running
    as another user too. The suffix matches :func:`_leftover_pattern`.
    """
    for _ in range(100):
        candidate = parent / f"{prefix}{secrets.token_hex(6)}"
        try:
            return create(candidate), candidate
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent}: no free temporary name starting with {prefix!r}")


def create_temporary_file(parent: Path, prefix: str) -> Path:
    """Create an empty file ``parent/<prefix><12 hex digits>`` (a name no one else has) and
    return its path; ``prefix`` should start with :data:`TMP_PREFIX`."""
    fd, path = _create_unique(Path(parent), prefix, _create_file)
    os.close(fd)
    return path


def _create_file(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)


@contextlib.contextmanager
def atomic_file(path: Path, mode: str = "wb") -> Iterator:
    """Open a temporary file next to ``path``; on success it replaces ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_unique(path.parent, f"{TMP_PREFIX}{path.name}.", _create_file)
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


class AtomicGroup:
    """Files that replace their paths together, as :func:`atomic_file` does one by one.

    :meth:`open` gives a handle on a temporary sibling (the caller writes and closes it);
    :meth:`commit` syncs every temporary to disk, in parallel threads (concurrent fsyncs share
    journal commits: thousands of outputs cost about one), renames each into place and syncs
    each folder once; :meth:`abort` removes them. For a run writing thousands of files (FLAN's
    task files), where one fsync per file costs more than the cleaning.

    A complete file closed by :meth:`close` instead, if it holds at least ``early_sync_bytes``
    (default :data:`EARLY_SYNC_BYTES`), is synced at once on a background thread while the run
    goes on (a large file's sync is its data's writeback, not a journal commit others could
    share); :meth:`commit` waits for those syncs before it renames anything, so no file is
    renamed before every file is synced.
    """

    def __init__(self, threads: int = 8, early_sync_bytes: int | None = None):
        self._threads = threads
        self._early_sync_bytes = EARLY_SYNC_BYTES if early_sync_bytes is None else early_sync_bytes
        self._pending: list[tuple[Path, Path]] = []
        self._temporaries: dict[int, Path] = {}  # an open handle's descriptor: its file
        self._syncing: dict[Path, Future] = {}  # temporaries whose sync has started
        self._sync_pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def open(self, path: Path, mode: str = "wb"):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_unique(path.parent, f"{TMP_PREFIX}{path.name}.", _create_file)
        try:
            # A binary file starts its data's write-back as it goes: the sync waits less.
            handle = WritebackFile(fd) if mode == "wb" else os.fdopen(fd, mode)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        with self._lock:
            self._pending.append((tmp, path))
            self._temporaries[fd] = tmp
        return handle

    def close(self, handle) -> None:
        """Close ``handle`` (one of :meth:`open`'s), its file complete; a large file's sync
        starts now, on a background thread, instead of at :meth:`commit`."""
        with self._lock:
            tmp = self._temporaries.pop(handle.fileno(), None)
        size = handle.tell()
        handle.close()
        if tmp is None or size < self._early_sync_bytes:
            return
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if self._sync_pool is None:
                self._sync_pool = ThreadPoolExecutor(
                    max_workers=self._threads, thread_name_prefix="atomic-sync"
                )
            self._syncing[tmp] = self._sync_pool.submit(fsync_file, tmp)

    def closer(self, handle) -> Callable[..., bool]:
        """An exit callback (``ExitStack.push``) for ``handle``: :meth:`close` when the block
        ends cleanly; after an error, a plain close (the file is removed by :meth:`abort`)."""

        def close(exc_type, exc, traceback) -> bool:
            if exc_type is None:
                self.close(handle)
            else:
                handle.close()
            return False

        return close

    def _started_syncs(self) -> dict[Path, Future]:
        """The syncs :meth:`close` started, each finished (failed or not) when this returns."""
        with self._lock:
            syncing, self._syncing = self._syncing, {}
            pool, self._sync_pool = self._sync_pool, None
            self._temporaries = {}
        if pool is not None:
            pool.shutdown(wait=True)
        return syncing

    def commit(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        pending, self._pending = self._pending, []
        try:
            synced = self._started_syncs()
            for done in synced.values():
                done.result()
            with ThreadPoolExecutor(max_workers=self._threads) as pool:
                list(pool.map(fsync_file, [tmp for tmp, _ in pending if tmp not in synced]))
            for tmp, path in pending:
                os.replace(tmp, path)
        except BaseException:
            for tmp, _ in pending:
                tmp.unlink(missing_ok=True)
            raise
        for folder in dict.fromkeys(path.parent for _, path in pending):
            _fsync_dir(folder)

    def abort(self) -> None:
        pending, self._pending = self._pending, []
        self._started_syncs()  # none still writing a file removed below
        for tmp, _ in pending:
            tmp.unlink(missing_ok=True)


def fsync_file(path: Path) -> None:
    """Write a file's data and metadata to disk (its name needs its folder's fsync too)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
        _, retired = _create_unique(
            target.parent,
            f"{TMP_PREFIX}retired-{target.name}.",
            lambda path: os.rename(target, path),
        )
    os.rename(staged, target)
    _fsync_dir(target.parent)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)


@contextlib.contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield an empty staging directory; on success it becomes ``target`` atomically."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _, staged = _create_unique(
        target.parent, f"{TMP_PREFIX}{target.name}.", lambda path: os.mkdir(path, 0o777)
    )
    try:
        yield staged
        replace_directory(staged, target)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise


def lock_path_for(target: Path) -> Path:
    """The lock file of an output: ``.<name>.lock`` beside it (hidden, so never a task)."""
    target = Path(target)
    return target.parent / f".{target.name}{LOCK_SUFFIX}"


@contextlib.contextmanager
def exclusive_lock(
    lock_path: Path, *, wait: bool = True, on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` (created if needed) for the block.

    With ``wait`` the call blocks until the lock is free (``on_wait`` is called first, e.g. to
    log); without, it raises ``BlockingIOError`` at once. The holder deletes the file before
    releasing it, so lock files do not pile up; a waiter that then wins the deleted file's lock
    sees that the path no longer names it and starts over. A holder killed by a signal leaves
    the file, and the kernel releases the lock: the next holder reuses and deletes it.
    """
    lock_path = Path(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    raise
                if on_wait is not None:
                    on_wait()
                fcntl.flock(fd, fcntl.LOCK_EX)
            if not _names_same_file(lock_path, fd):
                continue  # the previous holder deleted it after we opened it
            try:
                yield
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock_path)
            return
        finally:
            os.close(fd)


@contextlib.contextmanager
def shared_lock(lock_path: Path, *, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold a shared ``flock`` on ``lock_path`` (created if needed) for the block: for readers
    of an output whose writers hold :func:`exclusive_lock` on the same path. Readers share it;
    a writer waits for every reader, and a reader for the writer (``on_wait`` is called first).

    The protocol is :func:`exclusive_lock`'s: a reader re-checks that the path still names the
    file it locked (a writer deletes it before releasing). A reader leaves the file to others
    still reading; on leaving it deletes it only if it can take it exclusively without waiting
    (no one else holds it), so lock files do not pile up. Raises ``OSError`` if the file can be
    neither created nor opened (a read-only folder).
    """
    lock_path = Path(lock_path)
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno not in _NOT_WRITABLE:
                raise
            # Not ours to create (read-only, or another user's folder): a writer's file can
            # still be locked through a read-only descriptor.
            fd = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                fcntl.flock(fd, fcntl.LOCK_SH)
            if not _names_same_file(lock_path, fd):
                continue  # a writer deleted it after we opened it
            try:
                yield
            finally:
                with contextlib.suppress(BlockingIOError):
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    if _names_same_file(lock_path, fd):
                        with contextlib.suppress(OSError):
                            os.unlink(lock_path)
            return
        finally:
            os.close(fd)


def _names_same_file(path: Path, fd: int) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


# The suffixes of this project's temporary names, after ``.tmp-<what>.``:
#   <12 hex digits>             _create_unique (atomic_file, atomic_directory, replace_directory,
#                               create_temporary_file)
#   <pid>.<nanos>.<count>       the Rust writer's StagedDir (nanoseconds since 1970: 19 digits)
_OWN_SUFFIX = r"(?:[0-9a-f]{12}|\d+\.\d{16,}\.\d+)"
_OWN_TEMPORARY = re.compile(rf"{re.escape(TMP_PREFIX)}.+\.{_OWN_SUFFIX}")


def is_own_temporary(name: str) -> bool:
    """Whether ``name`` is one of this project's temporary names (of any output), and so may
    be swept once idle. ``.tmp-notes`` or ``.tmp-sampled.notes`` are not."""
    return _OWN_TEMPORARY.fullmatch(name) is not None


def _leftover_pattern(name: str) -> re.Pattern[str]:
    # The exact temporary names of `name`'s writers, so that no other output's leftovers match:
    #   .tmp-<name>.<suffix>            atomic_file / atomic_directory / Rust StagedDir
    #   .tmp-retired-<name>.<suffix>    replace_directory / Rust StagedDir
    #   .tmp-retired-<name>-<pid>       replace_directory of earlier versions
    escaped = re.escape(name)
    return re.compile(
        rf"{re.escape(TMP_PREFIX)}(?:(?:retired-)?{escaped}\.{_OWN_SUFFIX}|retired-{escaped}-\d+)"
    )


def leftovers_of(target: Path) -> list[Path]:
    """The ``.tmp-`` siblings that writes of ``target`` left behind (sorted)."""
    target = Path(target)
    if not target.parent.is_dir():
        return []
    pattern = _leftover_pattern(target.name)
    return sorted(entry for entry in target.parent.iterdir() if pattern.fullmatch(entry.name))


def _remove_entry(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def remove_leftovers(target: Path) -> list[Path]:
    """Delete :func:`leftovers_of` ``target``; call it only while holding ``target``'s lock."""
    removed = leftovers_of(target)
    for entry in removed:
        _remove_entry(entry)
    return removed


def remove_leftovers_of_many(targets: list[Path]) -> list[Path]:
    """:func:`remove_leftovers` for many targets, listing each parent folder once (not once
    per target, which is quadratic in a folder of thousands of outputs). Hold every lock."""
    by_parent: dict[Path, list[Path]] = {}
    for target in targets:
        by_parent.setdefault(Path(target).parent, []).append(Path(target))
    removed = []
    for parent, members in by_parent.items():
        if not parent.is_dir():
            continue
        temporaries = [entry for entry in parent.iterdir() if entry.name.startswith(TMP_PREFIX)]
        for target in members if temporaries else []:
            pattern = _leftover_pattern(target.name)
            removed.extend(entry for entry in temporaries if pattern.fullmatch(entry.name))
    for entry in sorted(removed):
        _remove_entry(entry)
    return sorted(removed)


def last_write_time(entry: Path) -> float:
    """The newest mtime of ``entry`` and, for a folder, of everything in it."""
    newest = entry.lstat().st_mtime
    if entry.is_dir() and not entry.is_symlink():
        for path in entry.rglob("*"):
            with contextlib.suppress(FileNotFoundError):
                newest = max(newest, path.lstat().st_mtime)
    return newest


def remove_stale_temporaries(
    directory: Path, older_than: float = STALE_AFTER_SECONDS, now: float | None = None
) -> list[Path]:
    """Delete entries directly under ``directory`` that carry one of this project's temporary
    names (:func:`is_own_temporary`) and were not written for ``older_than`` seconds (a live
    writer keeps writing its staged files); return what was removed. Other ``.tmp-*`` names
    are a user's and stay."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    now = time.time() if now is None else now
    removed = []
    for entry in sorted(directory.iterdir()):
        if not is_own_temporary(entry.name):
            continue
        try:
            idle = now - last_write_time(entry)
        except FileNotFoundError:
            continue  # its writer finished (renamed it) meanwhile
        if idle > older_than:
            _remove_entry(entry)
            removed.append(entry)
    return removed
