"""Reading the 1-D integer ``.npy`` arrays of tokenized folders: fast, and errors name the file.

A sampled corpus has thousands of small arrays, where ``numpy.load``'s cost is mostly parsing
the header with ``ast.literal_eval``. The headers of a 1-D integer array have two fixed forms,
``numpy.save``'s (``{'descr': '<i8', 'fortran_order': False, 'shape': (N,), }``) and that of
Rust's ``ndarray-npy``, which data_io's tokenizer and ours write (the same without the ``, ``
before ``}``). They are read by the Rust core's parser (``hrm_assets._core.read_npy_header``,
``rust_tokenizer/src/npy/``), the one statement of that rule for both languages. Any other
header goes through numpy's own parser, so nothing valid is refused.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np

from hrm_assets import _core


class NpyFileError(ValueError):
    """A file is not a readable 1-D integer ``.npy`` array; the message names it."""


class NpyLayout(NamedTuple):
    dtype: np.dtype
    length: int
    data_offset: int


def _read_header(handle: BinaryIO, path: Path) -> NpyLayout:
    layout = _plain_layout(path)
    if layout is not None:
        return layout
    handle.seek(0)
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
    else:
        raise ValueError(f"unsupported .npy format version {version}")
    if len(shape) != 1 or dtype.kind not in "iu":
        raise NpyFileError(f"{path}: expected a 1-D integer array, got shape {shape} dtype {dtype}")
    return NpyLayout(dtype, shape[0], handle.tell())


def _open_layout(handle: BinaryIO, path: Path) -> NpyLayout:
    try:
        layout = _read_header(handle, path)
    except NpyFileError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise NpyFileError(f"{path}: not a readable .npy array: {exc}") from None
    size = os.fstat(handle.fileno()).st_size
    if size < layout.data_offset + layout.length * layout.dtype.itemsize:
        raise NpyFileError(f"{path}: not a readable .npy array: the file is truncated")
    return layout


def npy_layout(path: Path) -> NpyLayout:
    """(dtype, length, byte offset of the data) of a 1-D integer ``.npy``, from its header."""
    try:
        with open(path, "rb") as handle:
            return _open_layout(handle, path)
    except FileNotFoundError:
        raise NpyFileError(f"{path}: missing") from None


def load_integers(path: Path) -> np.ndarray:
    """A 1-D integer ``.npy`` array, read whole."""
    try:
        with open(path, "rb", buffering=0) as handle:
            layout = _open_layout(handle, path)
            array = np.empty(layout.length, dtype=layout.dtype)
            view = memoryview(array).cast("B")
            handle.seek(layout.data_offset)
            filled = 0
            while filled < len(view):
                got = handle.readinto(view[filled:])
                if not got:
                    raise NpyFileError(f"{path}: not a readable .npy array: the file is truncated")
                filled += got
    except FileNotFoundError:
        raise NpyFileError(f"{path}: missing") from None
    except OSError as exc:
        raise NpyFileError(f"{path}: not a readable .npy array: {exc}") from None
    return array


_DTYPES: dict[str, np.dtype] = {}


def _plain_layout(path: str | Path) -> NpyLayout | None:
    """The layout of a plain 1-D integer header (numpy's or ndarray-npy's), from the Rust
    core's parser; None for any other header, or a file it cannot read (the callers' numpy
    path then names the problem)."""
    try:
        header = _core.read_npy_header(path)
    except OSError:
        return None
    if header is None:
        return None
    descr, _, (length,), data_offset = header
    dtype = _DTYPES.get(descr) or _DTYPES.setdefault(descr, np.dtype(descr))
    return NpyLayout(dtype, length, data_offset)


def _fits(layout: NpyLayout | None, size: int) -> bool:
    return layout is not None and size >= layout.data_offset + layout.length * layout.dtype.itemsize


def npy_layout_quickly(path: str) -> NpyLayout:
    """:func:`npy_layout` from the Rust parser's small read for a plain header (numpy's or
    ndarray-npy's); anything else goes through :func:`npy_layout` and its errors."""
    layout = _plain_layout(path)
    try:
        size = os.stat(path).st_size
    except OSError:
        return npy_layout(path)
    return layout if _fits(layout, size) else npy_layout(path)


def load_integers_quickly(path: str) -> np.ndarray:
    """:func:`load_integers` for plain files (numpy's or ndarray-npy's 1-D header, nothing
    missing): the header from the Rust parser, then the file in one read; the array is
    read-only. Anything else goes through :func:`load_integers`, so errors are the same and
    name the file."""
    layout = _plain_layout(path)
    if layout is None:
        return load_integers(path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return load_integers(path)
    try:
        data = os.read(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    if _fits(layout, len(data)):
        return np.frombuffer(
            data, dtype=layout.dtype, count=layout.length, offset=layout.data_offset
        )
    return load_integers(path)
