"""One consistent version of every folder of a tokenized root, held while the sampler reads it.

The sampler reads a task folder's ``tokens.npy`` header, its span arrays and its tokens at
different times. The tokenizer replaces a folder by renaming a new one into place, holding the
folder's lock ``.<name>.lock`` (``hrm_assets.common.atomic.exclusive_lock``) while it decides and
writes. A folder replaced between two reads gave epochs whose spans describe one version and
whose tokens come from another, and a run that passed ``hrm-verify``.

So the sampler holds a shared lock (``hrm_assets.common.atomic.shared_lock``) on
``tokenizer_info.json`` and on every task folder from listing them to its last read: a tokenizer
waits to rewrite or prune a folder until the sampler is done with it, and the sampler waits for a
tokenizer that is writing one. Locks are taken in name order, the order in which a tokenizer run
takes the locks of its batch, so neither can hold one the other needs while waiting for the next. A
folder listed but replaced or pruned before its lock was taken shows in a second listing
under the locks, and the listing starts over.

Where a lock file cannot be created (a read-only root, another user's folder), the folder's
identity (inode, change time, manifest) is recorded instead and compared when reading ends; a
folder that changed is an error naming it, so nothing is written from a mixed read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
from collections.abc import Callable, Iterator
from pathlib import Path

from hrm_assets.common.atomic import lock_path_for, shared_lock
from hrm_assets.common.manifest import MANIFEST_FILE
from hrm_assets.common.settings import TOKENIZER_INFO_FILE

# Open files besides the locks: the readers' own files, the output, the interpreter's.
OPEN_FILE_HEADROOM = 256
LISTING_ATTEMPTS = 3
# A lock file that cannot be created (read-only) and does not exist (no writer holds it now).
_CANNOT_LOCK = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT)

Identity = tuple[int, int, int, int, bytes | None]


class SnapshotError(ValueError):
    """The tokenized root did not hold still; the message names the folders that changed."""


def identity(path: Path) -> Identity | None:
    """What changes whenever ``path`` is replaced or rewritten: device, inode, change and
    modification times, and a folder's manifest (``None`` if ``path`` is gone)."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    manifest = None
    if os.path.isdir(path):
        with contextlib.suppress(OSError):
            manifest = (Path(path) / MANIFEST_FILE).read_bytes()
    return (status.st_dev, status.st_ino, status.st_ctime_ns, status.st_mtime_ns, manifest)


def allow_open_files(count: int) -> None:
    """Raise this process's soft limit on open files to hold ``count`` locks at once;
    :class:`SnapshotError` when the hard limit does not allow it."""
    needed = count + OPEN_FILE_HEADROOM
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return
    if hard != resource.RLIM_INFINITY and needed > hard:
        raise SnapshotError(
            f"reading {count} task folders at once takes {needed} open files (a lock each), "
            f"more than this process may open ({hard}, ulimit -Hn)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


class TokenizedSnapshot:
    """The task folders of one listing, each held still until :meth:`release`."""

    def __init__(
        self, task_dirs: list[Path], locks: contextlib.ExitStack, unlocked: dict[Path, Identity]
    ):
        self.task_dirs = task_dirs
        self._locks = locks
        self._unlocked = unlocked

    @property
    def unlocked(self) -> list[Path]:
        """Paths held still by no lock (their lock file could not be created)."""
        return sorted(self._unlocked)

    def release(self) -> None:
        """End the reading: release the locks, and raise :class:`SnapshotError` if a path that
        no lock held changed meanwhile."""
        self._locks.close()
        changed = [path for path, before in self._unlocked.items() if identity(path) != before]
        if changed:
            shown = ", ".join(str(path) for path in sorted(changed)[:5])
            raise SnapshotError(
                f"{shown}: changed while being read (re-tokenized?), and no lock could hold it "
                f"still (its folder is not writable to this user); nothing was written: sample "
                f"again once tokenization is done"
            )

    def close(self) -> None:
        """Release the locks without looking at what changed (reading failed anyway)."""
        self._locks.close()


@contextlib.contextmanager
def tokenized_snapshot(
    root: Path,
    list_tasks: Callable[[Path], list[Path]],
    *,
    on_wait: Callable[[Path], None] | None = None,
) -> Iterator[TokenizedSnapshot]:
    """Hold ``root``'s ``tokenizer_info.json`` and the task folders ``list_tasks(root)`` lists
    still for the block (or until :meth:`TokenizedSnapshot.release`). ``on_wait(path)`` is
    called before waiting for a writer of ``path``. Raises :class:`SnapshotError` when the
    listing keeps changing or the locks cannot all be held."""
    root = Path(root)
    snapshot = _hold(root, list_tasks, on_wait)
    try:
        yield snapshot
    finally:
        snapshot.close()


def _hold(
    root: Path, list_tasks: Callable[[Path], list[Path]], on_wait: Callable[[Path], None] | None
) -> TokenizedSnapshot:
    changed: list[Path] = []
    for _ in range(LISTING_ATTEMPTS):
        listed = list_tasks(root)
        allow_open_files(len(listed) + 1)
        locks = contextlib.ExitStack()
        try:
            unlocked = {}
            for path in [root / TOKENIZER_INFO_FILE, *listed]:
                waited = (lambda path=path: on_wait(path)) if on_wait is not None else None
                try:
                    locks.enter_context(shared_lock(lock_path_for(path), on_wait=waited))
                except OSError as exc:
                    if exc.errno not in _CANNOT_LOCK:
                        raise  # e.g. out of file descriptors: not a reason to go unlocked
                    unlocked[path] = identity(path)
            current = list_tasks(root)
        except BaseException:
            locks.close()
            raise
        if current == listed:
            return TokenizedSnapshot(listed, locks, unlocked)
        locks.close()
        changed = sorted(set(current).symmetric_difference(listed))
    shown = ", ".join(path.name for path in changed[:5])
    raise SnapshotError(
        f"{root}: task folders kept appearing or disappearing while being listed ({shown}); "
        f"sample again once tokenization is done"
    )
