"""Writing a sampled output's ``.npy`` arrays: fsynced, and hashed from memory as they are written.

Every writer here returns the array's ``manifest.json`` entry (``{"sha256", "size"}``), computed
over the very bytes it wrote, so the manifest never costs a second read of the output. The
bytes are those of ``numpy.save`` (format 1.0 header, C order), as data_io writes them.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hrm_assets import _core
from hrm_assets.common.progress import progress_bar

# Elements per block when concatenating tokens: big enough that the per-block cost (a file open,
# a channel message) is noise, small enough that the blocks in flight take a few MiB.
COPY_BLOCK = 1 << 19

ManifestEntry = dict[str, int | str]


class TokenCopyError(ValueError):
    """A task's ``tokens.npy`` cannot be copied; the message names the file."""


class CopyStopped(Exception):
    """The caller stopped :func:`concatenate_tokens` (see its ``stop``)."""


def npy_header(dtype: np.dtype, length: int) -> bytes:
    """The header ``numpy.save`` writes for a 1-D array of ``length`` elements of ``dtype``."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header,
        {
            "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
            "fortran_order": False,
            "shape": (int(length),),
        },
    )
    return header.getvalue()


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data) :]


def save_npy(path: Path, array: np.ndarray) -> ManifestEntry:
    """Write a 1-D array as ``numpy.save`` would, fsync it, and return its manifest entry."""
    array = np.ascontiguousarray(array)
    header = npy_header(array.dtype, len(array))
    data = memoryview(array).cast("B")
    digest = hashlib.sha256(header)
    digest.update(data)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            _write_all(fd, memoryview(header))
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        # os.write and fsync name no file: a full disk said only "[Errno 28]".
        if exc.filename is None:
            raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None
        raise
    return {"sha256": digest.hexdigest(), "size": len(header) + len(data)}


@dataclass(frozen=True)
class TokenSource:
    """Where one task's tokens sit in its ``tokens.npy``: element type, count, data offset."""

    path: Path
    dtype: np.dtype
    count: int
    data_offset: int


def concatenate_tokens(
    destination: Path,
    sources: list[TokenSource],
    dtype: np.dtype,
    *,
    workers: int = 2,
    progress: bool = False,
    stop: threading.Event | None = None,
) -> tuple[int, ManifestEntry]:
    """Write every source's tokens back to back into one ``.npy`` of ``dtype``, fsynced.

    Returns the largest source id (ids that do not fit ``dtype`` are cast like a numpy
    assignment and wrap, as in data_io: the caller refuses the output then) and the file's
    manifest entry.

    The Rust core does the work without the GIL (``rust_tokenizer/src/sample/concat.rs``):
    ``workers`` threads read, cast and write blocks of ``COPY_BLOCK`` elements at their offsets,
    two blocks each at most ahead of the thread that hashes them in file order from the same
    buffers. Memory stays a few MiB whatever the corpus, and the hash costs no second read.
    Setting ``stop`` (from another thread) ends the copy early with :class:`CopyStopped`,
    leaving ``destination`` unfinished.
    """
    dtype = np.dtype(dtype)
    total = sum(source.count for source in sources)
    header = npy_header(dtype, total)
    with progress_bar(
        progress, total=total, desc="Writing tokens", unit="tok", unit_scale=True
    ) as bar:

        def report(elements: int) -> None:
            if stop is not None and stop.is_set():
                raise CopyStopped(f"{destination}: the copy was stopped")
            bar.update(elements)

        try:
            max_id, sha256, size = _core.concatenate_token_arrays(
                str(destination),
                header,
                [
                    (str(source.path), source.dtype.str, source.count, source.data_offset)
                    for source in sources
                ],
                dtype.str,
                workers=max(1, workers),
                block_elements=COPY_BLOCK,
                progress=report if progress or stop is not None else None,
            )
        except ValueError as exc:  # a source shorter than its header says, or not integers
            raise TokenCopyError(str(exc)) from None
    return (-1 if max_id is None else max_id), {"sha256": sha256, "size": size}
