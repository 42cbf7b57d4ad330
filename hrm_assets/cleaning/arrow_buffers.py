"""Arrow arrays to and from numpy arrays and Python strings, through their buffers.

pyarrow's own conversions (``pa.array`` of a list or of a numpy array, ``Array.to_numpy``,
``pa.scalar``, ``pa.repeat``, a Python value given to a compute function, a numpy array given
to ``take`` or ``filter``) import pandas the first time one runs in a process: 0.4 to 0.7 s on
this machine, more than SYNTH's rule costs for a whole file. The columnar engine and its rules
use these helpers instead; ``pa.Array.from_buffers`` and numpy views of an array's buffers
never touch pandas (``tests/cleaning/test_no_pandas.py`` keeps it so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


def _single(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    import pyarrow as pa

    if not isinstance(array, pa.ChunkedArray):
        return array
    return array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    """``length`` bits of an Arrow bitmap from bit ``offset``, as numpy booleans."""
    import numpy as np

    packed = np.frombuffer(buffer, dtype=np.uint8, count=(offset + length + 7) // 8)
    return np.unpackbits(packed, count=offset + length, bitorder="little")[offset:].view(bool)


def true_flags(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Where a boolean array is true, as numpy booleans (a null is not true)."""
    import numpy as np

    array = _single(array)
    validity, values = array.buffers()
    if not len(array):
        return np.zeros(0, dtype=bool)
    flags = _bits(values, array.offset, len(array))
    if array.null_count:
        flags = flags & _bits(validity, array.offset, len(array))
    return flags


def null_flags(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Where ``array`` is null, as numpy booleans (``array.is_null()`` in numpy)."""
    import numpy as np

    if not array.null_count:
        return np.zeros(len(array), dtype=bool)
    return true_flags(_single(array).is_null())


def integers(array: pa.Array | pa.ChunkedArray, null_as: int | None = None) -> np.ndarray:
    """The values of an integer array as numpy integers: a read-only view when it has no
    nulls; else a copy with ``null_as`` in place of each null (ValueError without it)."""
    import numpy as np
    import pyarrow as pa

    array = _single(array)
    kind = array.type
    if not pa.types.is_integer(kind):
        raise TypeError(f"{kind} is not an integer type")
    dtype = np.dtype(f"<{'i' if pa.types.is_signed_integer(kind) else 'u'}{kind.bit_width // 8}")
    values = array.buffers()[1]
    if values is None:  # an empty array may have no buffers
        return np.zeros(0, dtype=dtype)
    view = np.frombuffer(values, dtype=dtype, count=array.offset + len(array))[array.offset :]
    if not array.null_count:
        return view
    if null_as is None:
        raise ValueError("an integer array with nulls and no value for them")
    return np.where(null_flags(array), dtype.type(null_as), view)


def boolean_array(flags: np.ndarray) -> pa.BooleanArray:
    """``flags`` (numpy booleans) as an Arrow boolean array without nulls."""
    import numpy as np
    import pyarrow as pa

    packed = np.packbits(np.asarray(flags, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(flags), [None, pa.py_buffer(packed)])


def index_array(indices: np.ndarray) -> pa.Int64Array:
    """Row positions (numpy integers) as an Arrow ``int64`` array, for ``take``."""
    import numpy as np
    import pyarrow as pa

    values = np.ascontiguousarray(indices, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def integer_scalar(value: int) -> pa.Int64Scalar:
    """``value`` as an Arrow ``int64`` scalar, for a compute function's argument."""
    import numpy as np

    return index_array(np.array([value]))[0]


def string_array(values: Sequence[str]) -> pa.StringArray:
    """Python strings as an Arrow ``string`` array without nulls."""
    import numpy as np
    import pyarrow as pa

    encoded = [value.encode("utf-8") for value in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(value) for value in encoded], out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise ValueError("strings too long for one Arrow string array")
    buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(encoded), buffers)


def string_buffers(array: pa.StringArray) -> tuple:
    """A ``string`` array's buffers as numpy views, for the Rust core: the int32 offsets of its
    rows (rows + 1), the data, the validity bitmap (None without nulls) and its first row's bit
    in the bitmap."""
    import numpy as np

    validity, offsets, data = array.buffers()
    start = array.offset
    if offsets is None:  # an empty array may have no buffers
        offsets = np.zeros(1, dtype=np.int32)
    else:
        offsets = np.frombuffer(offsets, dtype=np.int32, count=start + len(array) + 1)[start:]
    data = np.zeros(0, dtype=np.uint8) if data is None else np.frombuffer(data, dtype=np.uint8)
    bits = np.frombuffer(validity, dtype=np.uint8) if array.null_count else None
    return offsets, data, bits, start


def string_array_of(offsets: bytes, data: bytes) -> pa.StringArray:
    """A ``string`` array without nulls over its buffers (int32 offsets, data)."""
    import pyarrow as pa

    rows = len(offsets) // 4 - 1
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), rows, buffers)


def text_array_of(offsets: bytes, data: bytes, width: int) -> pa.Array:
    """A text array without nulls over its buffers: ``string`` for ``width`` 4 (int32
    offsets), ``large_string`` for 8 (int64)."""
    import pyarrow as pa

    kind = {4: pa.string(), 8: pa.large_string()}[width]
    rows = len(offsets) // width - 1
    return pa.Array.from_buffers(kind, rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def text_column_buffers(rows: pa.Table | pa.RecordBatch, columns: Sequence[str]) -> tuple:
    """``(offsets, data, valid)`` of the text columns ``columns`` of ``rows`` (``string`` or
    ``large_string``), as the Rust core takes them: per column, its int64 offsets (rows + 1,
    from the column's first row), its data buffer, and a uint8 flag a row (0: null) or None
    when it has no null."""
    offsets, data, valid = [], [], []
    for name in columns:
        column_offsets, column_data, column_valid = _text_buffers(_single(rows.column(name)), name)
        offsets.append(column_offsets)
        data.append(column_data)
        valid.append(column_valid)
    return offsets, data, valid


def text_chunk_buffers(column: pa.Array | pa.ChunkedArray, name: str) -> list[tuple]:
    """Each chunk of the text column ``name`` as the Rust core takes it, without joining the
    chunks: ``(offsets, data)`` as :func:`text_column_buffers` gives them. A null is a
    ValueError naming the column."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    buffers = []
    for chunk in chunks:
        offsets, data, valid = _text_buffers(chunk, name)
        if valid is not None:
            raise ValueError(f"a null in {name}, a column that must hold text")
        buffers.append((offsets, data))
    return buffers


def _text_buffers(array: pa.Array, name: str) -> tuple:
    """One text array's int64 offsets, data and validity flags (None without nulls)."""
    import numpy as np
    import pyarrow as pa

    if pa.types.is_string(array.type):
        width = np.int32
    elif pa.types.is_large_string(array.type):
        width = np.int64
    else:
        raise ValueError(f"column {name!r} is {array.type}, not text")
    _, offset_buffer, data_buffer = array.buffers()
    start = array.offset
    if offset_buffer is None:  # an empty array may have no buffers
        offsets = np.zeros(1, dtype=np.int64)
    else:
        offsets = np.frombuffer(offset_buffer, dtype=width)[start : start + len(array) + 1]
        offsets = offsets.astype(np.int64)
    data = np.zeros(0, np.uint8) if data_buffer is None else np.frombuffer(data_buffer, np.uint8)
    valid = np.logical_not(null_flags(array)).astype(np.uint8) if array.null_count else None
    return offsets, data, valid


def string_scalar(value: str) -> pa.StringScalar:
    """``value`` as an Arrow scalar, for a compute function's argument."""
    return string_array([value])[0]


def repeated_string(value: str, length: int) -> pa.StringArray:
    """A ``string`` array of ``length`` copies of ``value``."""
    import numpy as np
    import pyarrow as pa

    encoded = value.encode("utf-8")
    if len(encoded) * length >= 2**31:
        raise ValueError("strings too long for one Arrow string array")
    offsets = np.arange(length + 1, dtype=np.int32) * np.int32(len(encoded))
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(encoded * length)]
    return pa.Array.from_buffers(pa.string(), length, buffers)
