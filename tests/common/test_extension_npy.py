"""``hrm_assets._core.read_npy_header`` against numpy: the headers of the two styles the
project reads (``numpy.save``'s and data_io's ``ndarray-npy``'s) give numpy's own reading of
them; any other header is left to numpy (None). ``hrm_assets._core.scan_arrays`` against
hashlib and numpy: one read of each file gives its size, SHA-256 and a plain array's figures."""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path

import numpy as np
import pytest

from hrm_assets import _core


def numpy_header(path: Path) -> tuple[np.dtype, bool, tuple[int, ...], int]:
    """numpy's own reading of a version 1.0 or 2.0 header: dtype, Fortran order, shape and
    where the data starts."""
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        read = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran_order, dtype = read(handle)
        return dtype, fortran_order, shape, handle.tell()


def as_ndarray_npy(path: Path) -> None:
    """Rewrite a ``numpy.save`` file's header as ``ndarray-npy`` writes it: no ``, `` before
    ``}``, the same length (two more spaces of padding)."""
    data = path.read_bytes()
    assert data.count(b",), }") == 1
    path.write_bytes(data.replace(b",), }", b",)}  ", 1))


ARRAYS = [
    np.zeros(0, dtype="<u4"),
    np.arange(3, dtype="<u4"),
    np.arange(976, dtype="<u8"),
    np.array([-1, 0, 7], dtype="<i8"),
    np.array([0, 255], dtype="|u1"),
    np.array([-1, 1], dtype="|i1"),
    np.array([258, 3], dtype=">u2"),
    np.array([1, 2], dtype=">i4"),
]


@pytest.mark.parametrize("style", ["numpy", "ndarray-npy"])
@pytest.mark.parametrize("array", ARRAYS, ids=lambda array: f"{array.dtype.str}x{len(array)}")
def test_plain_headers_read_as_numpy_reads_them(tmp_path, style, array):
    path = tmp_path / "a.npy"
    np.save(path, array)
    if style == "ndarray-npy":
        as_ndarray_npy(path)
    descr, fortran_order, shape, data_offset = _core.read_npy_header(path)
    dtype, numpy_fortran_order, numpy_shape, numpy_offset = numpy_header(path)
    assert np.dtype(descr) == dtype
    assert (fortran_order, shape, data_offset) == (numpy_fortran_order, numpy_shape, numpy_offset)
    assert np.array_equal(np.load(path), array)
    assert np.array_equal(
        np.frombuffer(path.read_bytes()[data_offset:], dtype=np.dtype(descr)), array
    )


def test_a_string_path_and_a_header_longer_than_128_bytes(tmp_path):
    path = tmp_path / "long.npy"
    np.save(path, np.arange(4, dtype="<i8"))
    data = path.read_bytes()
    header_len = int.from_bytes(data[8:10], "little")
    # Another 64 bytes of padding: still a plain header, the data 64 bytes further on.
    longer = data[:8] + (header_len + 64).to_bytes(2, "little") + data[10 : 10 + header_len - 1]
    path.write_bytes(longer + b" " * 64 + b"\n" + data[10 + header_len :])
    assert _core.read_npy_header(str(path)) == ("<i8", False, (4,), 192)
    assert np.array_equal(np.load(path), np.arange(4))


def write(path: Path, array: np.ndarray, **kwargs) -> Path:
    with open(path, "wb") as handle:
        np.lib.format.write_array(handle, array, **kwargs)
    return path


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda p: write(p, np.zeros((2, 3), dtype="<u4")), id="two-dimensional"),
        pytest.param(lambda p: write(p, np.asfortranarray(np.zeros((2, 3)))), id="fortran"),
        pytest.param(lambda p: write(p, np.zeros(3, dtype="<f8")), id="floats"),
        pytest.param(lambda p: write(p, np.zeros(3, dtype="<u4"), version=(2, 0)), id="v2"),
        pytest.param(lambda p: write(p, np.array(5, dtype="<i8")), id="scalar"),
        pytest.param(lambda p: p.write_bytes(b"not an array"), id="not-npy"),
        pytest.param(lambda p: p.write_bytes(b""), id="empty"),
        pytest.param(
            lambda p: p.write_bytes(
                write(p, np.zeros(3, dtype="<u4")).read_bytes()[:100],
            ),
            id="cut-header",
        ),
    ],
)
def test_other_headers_are_left_to_numpy(tmp_path, make):
    path = tmp_path / "other.npy"
    make(path)
    assert _core.read_npy_header(path) is None


def test_an_unreadable_file_raises_oserror_naming_it(tmp_path):
    missing = tmp_path / "missing.npy"
    with pytest.raises(FileNotFoundError) as raised:
        _core.read_npy_header(missing)
    assert raised.value.errno == errno.ENOENT
    assert raised.value.filename == str(missing)
    with pytest.raises(IsADirectoryError):
        _core.read_npy_header(tmp_path)


def test_a_scan_gives_size_digest_and_a_plain_arrays_figures(tmp_path):
    paths, expected = [], []
    for index, array in enumerate(ARRAYS):
        path = tmp_path / f"a{index}.npy"
        np.save(path, array)
        if index % 2:
            as_ndarray_npy(path)
        data = path.read_bytes()
        top = int(array.max()) if len(array) else None
        paths.append(str(path))
        expected.append(
            (len(data), hashlib.sha256(data).hexdigest(), array.dtype.str, len(array), top)
        )
    other = tmp_path / "metadata.json"
    other.write_text("{}")
    paths.append(other)
    expected.append((2, hashlib.sha256(b"{}").hexdigest(), None, None, None))
    for threads in (None, 1, 3):
        assert _core.scan_arrays(paths, threads) == expected


@pytest.mark.parametrize("cut", [1, 4, 100])
def test_a_truncated_array_has_no_figures(tmp_path, cut):
    path = tmp_path / "t.npy"
    np.save(path, np.arange(10, dtype="<u4"))
    data = path.read_bytes()[:-cut]
    path.write_bytes(data)
    assert _core.scan_arrays([path]) == [
        (len(data), hashlib.sha256(data).hexdigest(), None, None, None)
    ]


def test_an_unreadable_file_is_an_oserror_in_its_slot(tmp_path):
    present = tmp_path / "a.npy"
    np.save(present, np.arange(3, dtype="<u8"))
    missing = tmp_path / "missing.npy"
    first, gone, directory, last = _core.scan_arrays([present, missing, tmp_path, present])
    assert first == last and first[2:] == ("<u8", 3, 2)
    assert isinstance(gone, FileNotFoundError)
    assert (gone.errno, gone.filename) == (errno.ENOENT, str(missing))
    assert isinstance(directory, IsADirectoryError)
