"""Fast 1-D integer .npy reading: the same arrays as numpy.load, and errors that name the file.

Both header forms are read on the fast path: numpy's, and that of Rust's ndarray-npy, which
data_io's tokenizer (and ours) write."""

from __future__ import annotations

import numpy as np
import pytest
from support.ndarray_npy import ndarray_npy_bytes

from hrm_assets.common.npy_files import (
    NpyFileError,
    load_integers,
    load_integers_quickly,
    npy_layout,
    npy_layout_quickly,
)


@pytest.mark.parametrize("dtype", ["<u1", "<u2", "<u4", "<u8", "<i4", "<i8", ">u4", ">i8"])
@pytest.mark.parametrize("length", [0, 1, 1000])
def test_reads_what_numpy_saves(tmp_path, dtype, length):
    array = (np.arange(length) * 7 % 251).astype(dtype)
    np.save(tmp_path / "a.npy", array)
    loaded = load_integers(tmp_path / "a.npy")
    assert loaded.dtype == np.dtype(dtype) and np.array_equal(loaded, array)
    layout = npy_layout(tmp_path / "a.npy")
    assert (layout.dtype, layout.length) == (np.dtype(dtype), length)
    assert layout.data_offset == (tmp_path / "a.npy").stat().st_size - array.nbytes


@pytest.mark.parametrize("dtype", ["<u4", "<u8"])
@pytest.mark.parametrize("length", [0, 1, 976])
def test_reads_ndarray_npy_files_on_the_fast_path(tmp_path, monkeypatch, dtype, length):
    array = (np.arange(length) * 13 % 4099).astype(dtype)
    path = tmp_path / "a.npy"
    path.write_bytes(ndarray_npy_bytes(array))
    assert np.array_equal(np.load(path), array)

    def numpy_parser(*_args):
        raise AssertionError("an ndarray-npy header went to numpy's parser")

    monkeypatch.setattr(np.lib.format, "read_magic", numpy_parser)
    for loaded in (load_integers(path), load_integers_quickly(str(path))):
        assert loaded.dtype == np.dtype(dtype) and np.array_equal(loaded, array)
    layout = npy_layout(path)
    assert layout == npy_layout_quickly(str(path)) == (np.dtype(dtype), length, 128)


def test_other_header_forms_go_through_numpy(tmp_path):
    array = np.arange(10, dtype="<u8")
    path = tmp_path / "v2.npy"
    with open(path, "wb") as handle:
        np.lib.format.write_array(handle, array, version=(2, 0))
    assert np.array_equal(load_integers(path), array)
    # A header with extra spaces numpy accepts but the fast pattern does not match.
    path = tmp_path / "spaced.npy"
    body = "{'descr':'<u8','fortran_order':False,'shape':(10,)}".ljust(117) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body.encode())
    with open(path, "ab") as handle:
        handle.write(array.tobytes())
    assert np.array_equal(load_integers(path), array)


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.zeros((2, 3), dtype=np.int64), "expected a 1-D integer array, got shape (2, 3)"),
        (
            np.zeros(4, dtype=np.float32),
            "expected a 1-D integer array, got shape (4,) dtype float32",
        ),
    ],
)
def test_wrong_arrays_are_named(tmp_path, array, message):
    np.save(tmp_path / "bad.npy", array)
    with pytest.raises(NpyFileError, match=rf"{tmp_path / 'bad.npy'}: .*") as caught:
        load_integers(tmp_path / "bad.npy")
    assert message in str(caught.value)


def test_truncated_missing_and_garbage_files_are_named(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(100, dtype=np.int64))
    data = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "a.npy").write_bytes(data[:-1])
    for read in (load_integers, npy_layout):
        with pytest.raises(
            NpyFileError, match="a.npy: not a readable .npy array: the file is trun"
        ):
            read(tmp_path / "a.npy")
        with pytest.raises(NpyFileError, match="missing.npy: missing"):
            read(tmp_path / "missing.npy")
    (tmp_path / "junk.npy").write_bytes(b"not numpy at all")
    with pytest.raises(NpyFileError, match="junk.npy: not a readable .npy array"):
        load_integers(tmp_path / "junk.npy")


def test_quick_loader_reads_numpy_files_and_defers_the_rest(tmp_path):
    plain = tmp_path / "plain.npy"
    np.save(plain, np.arange(5, dtype=">u4"))
    array = load_integers_quickly(str(plain))
    assert array.tolist() == [0, 1, 2, 3, 4] and array.dtype == np.dtype(">u4")
    fortran = tmp_path / "v2.npy"
    with open(fortran, "wb") as handle:
        np.lib.format.write_array(handle, np.arange(3, dtype="<i8"), version=(2, 0))
    assert load_integers_quickly(str(fortran)).tolist() == [0, 1, 2]
    truncated = tmp_path / "cut.npy"
    truncated.write_bytes(plain.read_bytes()[:-3])
    with pytest.raises(NpyFileError, match="cut.npy: not a readable .npy array: the file is"):
        load_integers_quickly(str(truncated))
    with pytest.raises(NpyFileError, match="gone.npy: missing"):
        load_integers_quickly(str(tmp_path / "gone.npy"))


def test_quick_layout_equals_the_full_reader(tmp_path):
    plain = tmp_path / "plain.npy"
    np.save(plain, np.arange(7, dtype="<u2"))
    assert npy_layout_quickly(str(plain)) == npy_layout(plain)
    version2 = tmp_path / "v2.npy"
    with open(version2, "wb") as handle:
        np.lib.format.write_array(handle, np.arange(3, dtype="<i8"), version=(2, 0))
    assert npy_layout_quickly(str(version2)) == npy_layout(version2)
    truncated = tmp_path / "cut.npy"
    truncated.write_bytes(plain.read_bytes()[:-1])
    with pytest.raises(NpyFileError, match="cut.npy: not a readable .npy array: the file is"):
        npy_layout_quickly(str(truncated))
