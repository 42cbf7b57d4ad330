"""Writing a sampled output's ``.npy`` arrays: fsynced, and hashed from memory as they are written.

Every writer here returns the array's ``manifest.json`` entry (``{"sha256", "size"}``), computed
over the very bytes it wrote, so the manifest never costs a second read of the output. The
bytes are those of ``numpy.save`` (format 1.0 header, C order), as data_io writes them.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

# Elements per block when concatenating tokens: big enough that Python's per-block cost is
# noise, small enough that the blocks in flight (two per reading thread) take a few MiB.
COPY_BLOCK = 1 << 19

ManifestEntry = dict[str, int | str]


class TokenCopyError(ValueError):
    """A task's ``tokens.npy`` cannot be copied; the message names the file."""


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
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, memoryview(header))
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return {"sha256": digest.hexdigest(), "size": len(header) + len(data)}


@dataclass(frozen=True)
class TokenSource:
    """Where one task's tokens sit in its ``tokens.npy``: element type, count, data offset."""

    path: Path
    dtype: np.dtype
    count: int
    data_offset: int


@dataclass(frozen=True)
class _Block:
    source: TokenSource
    start: int
    stop: int


def _blocks(sources: list[TokenSource], block: int) -> Iterator[_Block]:
    for source in sources:
        for start in range(0, source.count, block):
            yield _Block(source, start, min(start + block, source.count))


class _Slot:
    """One block's read and cast buffers, reused by every block that lands in this slot."""

    def __init__(self) -> None:
        self.arrays: dict[np.dtype, np.ndarray] = {}

    def get(self, dtype: np.dtype, elements: int) -> np.ndarray:
        held = self.arrays.get(dtype)
        if held is None or len(held) < elements:
            held = self.arrays[dtype] = np.empty(elements, dtype=dtype)
        return held[:elements]


def _read_block(block: _Block, dtype: np.dtype, slot: _Slot) -> tuple[memoryview, int]:
    """Read one block, cast it to ``dtype``; returns its bytes (in ``slot``) and its max id."""
    source = block.source
    raw = slot.get(source.dtype, block.stop - block.start)
    view = memoryview(raw).cast("B")
    position = source.data_offset + block.start * source.dtype.itemsize
    with open(source.path, "rb", buffering=0) as handle:
        handle.seek(position)
        filled = 0
        while filled < len(view):
            got = handle.readinto(view[filled:])
            if not got:
                raise TokenCopyError(f"{source.path}: shorter than its header says")
            filled += got
    max_id = int(raw.max()) if len(raw) else -1
    if source.dtype != dtype:
        cast = slot.get(dtype, len(raw))
        np.copyto(cast, raw, casting="unsafe")  # as numpy assignment: out-of-range ids wrap
        raw = cast
    return memoryview(raw).cast("B"), max_id


def concatenate_tokens(
    destination: Path,
    sources: list[TokenSource],
    dtype: np.dtype,
    *,
    workers: int = 2,
    progress: bool = False,
) -> tuple[int, ManifestEntry]:
    """Write every source's tokens back to back into one ``.npy`` of ``dtype``, fsynced.

    Returns the largest source id (the caller warns when ids do not fit ``dtype``: they are
    cast like a numpy assignment and wrap, as in data_io) and the file's manifest entry.

    ``workers`` threads read and cast blocks ahead, at most two blocks each, into reused
    buffers; this thread hashes and appends the blocks in order. Memory stays a few MiB
    whatever the corpus, and the hash costs no second read (numpy, file I/O and hashlib
    release the GIL, so the readers and the hashing overlap).
    """
    dtype = np.dtype(dtype)
    total = sum(source.count for source in sources)
    header = npy_header(dtype, total)
    digest = hashlib.sha256(header)
    in_flight = 2 * max(1, workers)
    slots = [_Slot() for _ in range(in_flight)]
    blocks = _blocks(sources, COPY_BLOCK)
    pending: deque[Future] = deque()
    max_id = -1
    fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with (
            ThreadPoolExecutor(max_workers=max(1, workers)) as pool,
            tqdm(
                total=total,
                desc="Writing tokens",
                unit="tok",
                unit_scale=True,
                disable=not progress,
            ) as bar,
        ):

            def read_next(slot: _Slot) -> None:
                block = next(blocks, None)
                if block is not None:
                    pending.append(pool.submit(_read_block, block, dtype, slot))

            _write_all(fd, memoryview(header))
            for slot in slots:
                read_next(slot)
            position = 0
            while pending:
                data, block_max = pending.popleft().result()
                digest.update(data)
                _write_all(fd, data)
                max_id = max(max_id, block_max)
                bar.update(len(data) // dtype.itemsize)
                # The block just written held this slot; the next block to read may reuse it.
                read_next(slots[position % in_flight])
                position += 1
        os.fsync(fd)
    finally:
        os.close(fd)
    return max_id, {"sha256": digest.hexdigest(), "size": len(header) + total * dtype.itemsize}
