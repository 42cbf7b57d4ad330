"""Whether two tokenized folders hold the same arrays.

Compared by dtype, shape and values, not by file bytes: the tokenizers-package baseline saves
with numpy's header and hrm-tokenize with data_io's (the ``ndarray-npy`` crate's), which differ
in the header text only. Byte identity with data_io's own binary is pinned by the golden tests
(``tests/tokenization/test_golden_tokenized.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

ARRAYS = ("tokens", "inst_start", "inst_len", "resp_start", "resp_len")


def same_array_file(first: Path, second: Path) -> bool:
    if not (first.is_file() and second.is_file()):
        return False
    a, b = np.load(first), np.load(second)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def differing_folders(first: Path, second: Path, names: Sequence[str]) -> list[str]:
    """The folders among ``names`` whose five arrays differ between two roots."""
    return [
        name
        for name in names
        if not all(
            same_array_file(first / name / f"{array}.npy", second / name / f"{array}.npy")
            for array in ARRAYS
        )
    ]
