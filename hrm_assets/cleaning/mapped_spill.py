"""Files read memory-mapped (spill files read back, dmmath's raw text files), their pages let
go while they are read.

pyarrow's Python API writes a Parquet row group in one ``write_table`` call holding all of
its Arrow columns. Read zero-copy from a memory-mapped spill file, those columns cost no heap,
but every page the writer touches stays mapped into the process until the call returns and
counts in its resident memory: 1.4 GiB for one 1M-row row group of OpenMathInstruct-2.

The pages are clean copies of the file: dropping them from the process
(``madvise(MADV_DONTNEED)``) while the writer runs loses nothing, since a page read again is
faulted back in from the page cache (or the disk). :func:`pages_dropped_while` drops them
every few milliseconds on a helper thread, so the process holds about what the writer reads
in that time; the bytes written do not change.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

DROP_INTERVAL_SECONDS = 0.02


class MappedFile:
    """``path`` mapped read-only; :attr:`buffer` is an Arrow buffer over its bytes (zero
    copy). Close it when the Arrow data read from it is no longer used. (A file cut short by
    another process while it is mapped ends the process with SIGBUS where a read would have
    seen the shorter file: only files nothing writes meanwhile are mapped.)"""

    def __init__(self, path: Path):
        import pyarrow as pa

        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            # The mapping keeps its own reference to the file: the handle may close.
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        self.buffer: pa.Buffer = pa.py_buffer(self._map if self._map is not None else b"")

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def drop_pages(self, start: int = 0, end: int | None = None) -> None:
        """Unmap resident pages from this process (they stay in the page cache): all of them,
        or those from the page holding byte ``start`` to the one holding byte ``end``, which
        stays (a reader done with bytes ``start:end`` may still need the rest of its page)."""
        if self._map is None or not hasattr(mmap, "MADV_DONTNEED"):
            return
        first = start - start % mmap.PAGESIZE
        stop = len(self._map) if end is None else end - end % mmap.PAGESIZE
        if stop > first:
            self._map.madvise(mmap.MADV_DONTNEED, first, stop - first)

    def close(self) -> None:
        self.buffer = None
        if self._map is not None:
            # Arrow arrays still alive over the mapping (a caller's reference) keep it open
            # until they go; the file itself may be removed meanwhile.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None


@contextlib.contextmanager
def pages_dropped_while(
    files: Sequence[MappedFile], interval: float = DROP_INTERVAL_SECONDS
) -> Iterator[None]:
    """Drop the mapped pages of ``files`` every ``interval`` seconds while the block runs
    (pyarrow's writer releases the GIL, so the helper thread runs beside it), and once more
    at its end."""
    if not files:
        yield
        return
    stop = threading.Event()

    def drop() -> None:
        while not stop.wait(interval):
            for mapped in files:
                mapped.drop_pages()

    helper = threading.Thread(target=drop, name="spill-pages", daemon=True)
    helper.start()
    try:
        yield
    finally:
        stop.set()
        helper.join()
        for mapped in files:
            mapped.drop_pages()
