"""tqdm progress bars that cost nothing when they are off.

A disabled ``tqdm`` still registers itself under a process-wide lock, and the first one a
process creates builds that lock (a multiprocessing semaphore): milliseconds a quiet library
call should not pay. ``progress_bar(False, ...)`` returns a stand-in with the same methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tqdm import tqdm


class _NoBar:
    def __init__(self, iterable: Iterable[Any] | None = None):
        self.iterable = iterable

    def __iter__(self) -> Iterator[Any]:
        return iter(self.iterable if self.iterable is not None else ())

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def update(self, n: float = 1) -> None:
        return None

    def close(self) -> None:
        return None


def progress_bar(enabled: bool, iterable: Iterable[Any] | None = None, **options: Any):
    """``tqdm(iterable, **options)`` when ``enabled``, else a bar that does nothing."""
    if enabled:
        return tqdm(iterable, **options)
    return _NoBar(iterable)
