"""An independent restatement of the `.npy` bytes data_io's tokenizer writes, for tests.

data_io's Rust tokenizer saves its arrays with the `ndarray-npy` crate (0.10): format version
1.0, the dictionary without numpy's trailing ``, `` before ``}``, then 1 to 64 spaces (never 0)
and a newline, so the whole header is a multiple of 64 bytes.

A restatement on purpose: an oracle written from the format, sharing nothing with the parser
it checks (``hrm_assets._core.read_npy_header``, the one the code uses).
"""

from __future__ import annotations

import numpy as np

MAGIC_V1 = b"\x93NUMPY\x01\x00"


def ndarray_npy_bytes(array: np.ndarray) -> bytes:
    """The file ``ndarray_npy::write_npy`` writes for a 1-D little-endian ``array``."""
    assert array.ndim == 1
    text = f"{{'descr': '{array.dtype.str}', 'fortran_order': False, 'shape': ({len(array)},)}}"
    unpadded = len(MAGIC_V1) + 2 + len(text) + 1
    total = unpadded + 64 - unpadded % 64
    padded = text.ljust(total - len(MAGIC_V1) - 2 - 1) + "\n"
    return MAGIC_V1 + len(padded).to_bytes(2, "little") + padded.encode("ascii") + array.tobytes()
