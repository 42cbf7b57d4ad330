"""Files written in chunks and hashed as they are written, for the manifest.

An export's arrays are too large to build in memory; each is written a chunk at a time, its
SHA-256 computed over the very bytes written (no second read), and closed with a check that
exactly the announced number of elements arrived, so a bug can never leave a short file whose
header claims more.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

ManifestEntry = dict[str, int | str]


def npy_header_bytes(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """The header ``numpy.save`` writes for a C-order array of ``dtype`` and ``shape``."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header,
        {
            "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
            "fortran_order": False,
            "shape": tuple(int(n) for n in shape),
        },
    )
    return header.getvalue()


# Chunks from this size on are hashed and written at the same time (on two threads).
OVERLAP_BYTES = 1 << 20


class StreamedFile:
    """A file of ``count`` elements of ``dtype`` after an optional ``prefix`` (a header),
    appended to with :meth:`write`; :meth:`close` fsyncs it and returns its manifest entry.

    With a ``writer`` (a one-thread executor shared by an export's files) the hashing and the
    write of each chunk happen there, in order, while the caller builds the next chunk: both
    release the GIL, so on two cores they overlap. At most one chunk per file waits.
    """

    def __init__(
        self,
        path: Path,
        dtype: np.dtype,
        count: int,
        prefix: bytes = b"",
        writer: ThreadPoolExecutor | None = None,
    ):
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.count = int(count)
        self.written = 0
        self._digest = hashlib.sha256(prefix)
        self._size = len(prefix)
        self._writer = writer
        self._pending: Future | None = None
        self._hasher: ThreadPoolExecutor | None = None
        self._handle = open(self.path, "wb")  # noqa: SIM115 (closed by close())
        self._handle.write(prefix)

    def _hash_and_write(self, values: np.ndarray) -> None:
        data = memoryview(values).cast("B")
        if len(data) < OVERLAP_BYTES:
            self._digest.update(data)
            self._handle.write(data)
            return
        # Both release the GIL: a large chunk is hashed on the hashing thread while it is
        # written here (one after the other, they were most of a Megatron export's time).
        if self._hasher is None:
            self._hasher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="npy-sha256")
        hashed = self._hasher.submit(self._digest.update, data)
        try:
            self._handle.write(data)
        finally:
            hashed.result()

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def write(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=self.dtype).reshape(-1)
        if self.written + len(values) > self.count:
            raise ValueError(
                f"{self.path}: {self.written + len(values)} elements written, "
                f"{self.count} announced"
            )
        self.written += len(values)
        self._size += values.nbytes
        self._wait()
        if self._writer is None:
            self._hash_and_write(values)
        else:
            self._pending = self._writer.submit(self._hash_and_write, values)

    def _stop_hasher(self) -> None:
        if self._hasher is not None:
            self._hasher.shutdown()
            self._hasher = None

    def close(self) -> ManifestEntry:
        try:
            self._wait()
        except BaseException:
            self._handle.close()
            raise
        finally:
            self._stop_hasher()
        if self.written != self.count:
            self._handle.close()
            raise ValueError(
                f"{self.path}: {self.written} elements written, {self.count} announced"
            )
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()
        return {"sha256": self._digest.hexdigest(), "size": self._size}

    def abandon(self) -> None:
        """Close without checks (the caller is failing; the staged folder goes with it)."""
        with contextlib.suppress(BaseException):
            self._wait()
        self._stop_hasher()
        self._handle.close()


def streamed_npy(
    path: Path,
    dtype: np.dtype,
    shape: tuple[int, ...],
    writer: ThreadPoolExecutor | None = None,
) -> StreamedFile:
    """A :class:`StreamedFile` that becomes a ``.npy`` of ``shape`` (filled in C order)."""
    count = int(np.prod(shape, dtype=np.int64))
    return StreamedFile(path, dtype, count, npy_header_bytes(dtype, shape), writer)


def save_small_npy(path: Path, array: np.ndarray) -> ManifestEntry:
    """Write a whole (index-sized) array as ``numpy.save`` would; return its manifest entry."""
    array = np.ascontiguousarray(array)
    stream = streamed_npy(path, array.dtype, array.shape)
    stream.write(array)
    return stream.close()
