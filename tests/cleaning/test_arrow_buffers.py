"""hrm_assets.cleaning.arrow_buffers against pyarrow's own conversions (which import pandas,
so they are the reference here only): sliced arrays, nulls, chunks, empty arrays, non-ASCII."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hrm_assets.cleaning import arrow_buffers as buffers


def _booleans() -> pa.Array:
    rng = np.random.default_rng(3)
    values = [None if rng.random() < 0.2 else bool(rng.random() < 0.5) for _ in range(300)]
    return pa.array(values, pa.bool_())


@pytest.mark.parametrize("start, length", [(0, 300), (5, 37), (13, 0), (299, 1), (8, 64)])
def test_flags_of_sliced_arrays_with_nulls(start, length):
    array = _booleans().slice(start, length)
    expected = pc.fill_null(array, False).to_numpy(zero_copy_only=False)
    assert buffers.true_flags(array).tolist() == expected.tolist()
    assert buffers.null_flags(array).tolist() == array.is_null().to_numpy(False).tolist()
    strings = pa.array(["a", None, "é", None, ""] * 60).slice(start, length)
    assert buffers.null_flags(strings).tolist() == strings.is_null().to_numpy(False).tolist()


def test_flags_of_chunked_arrays_and_arrays_without_nulls():
    chunked = pa.chunked_array([_booleans().slice(0, 100), _booleans().slice(150, 90)])
    expected = pc.fill_null(chunked, False).to_numpy()
    assert buffers.true_flags(chunked).tolist() == expected.tolist()
    assert buffers.null_flags(chunked).tolist() == chunked.is_null().to_numpy().tolist()
    plain = pa.array([True, False, True])
    assert buffers.true_flags(plain).tolist() == [True, False, True]
    assert buffers.null_flags(plain).tolist() == [False, False, False]
    assert buffers.true_flags(pa.array([], pa.bool_())).tolist() == []


@pytest.mark.parametrize("kind", [pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.uint64()])
def test_integers(kind):
    array = pa.array([3, 0, 7, 120, 1, 9], kind).slice(1, 4)
    assert buffers.integers(array).tolist() == [0, 7, 120, 1]
    assert buffers.integers(array).dtype == np.dtype(kind.to_pandas_dtype())
    with_nulls = pa.array([4, None, 6, None], kind)
    assert buffers.integers(with_nulls, null_as=0).tolist() == [4, 0, 6, 0]
    with pytest.raises(ValueError, match="nulls"):
        buffers.integers(with_nulls)
    assert buffers.integers(pa.array([], kind)).tolist() == []
    with pytest.raises(TypeError):
        buffers.integers(pa.array(["1"]))


def test_arrays_from_numpy_and_python():
    flags = np.array([True, False] * 9 + [True])
    assert buffers.boolean_array(flags).equals(pa.array(flags))
    indices = np.array([4, 0, 2], dtype=np.int32)
    taken = pa.array(list("abcde")).take(buffers.index_array(indices))
    assert taken.to_pylist() == ["e", "a", "c"]
    values = ["", "tâche", "東京", "emoji 🙂", "a\x00b"]
    made = buffers.string_array(values)
    made.validate(full=True)
    assert made.equals(pa.array(values, pa.string()))
    assert buffers.string_array([]).equals(pa.array([], pa.string()))
    assert buffers.string_scalar("é").equals(pa.scalar("é"))
    assert buffers.integer_scalar(7).equals(pa.scalar(7, pa.int64()))


@pytest.mark.parametrize("value, length", [("direct", 5), ("", 3), ("synth,cot", 0), ("ü", 2)])
def test_repeated_string(value, length):
    made = buffers.repeated_string(value, length)
    made.validate(full=True)
    assert made.equals(pa.array([value] * length, pa.string()))
