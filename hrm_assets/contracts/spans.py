"""The arrays of a tokenized folder and of a sampled epoch, named once: by the Rust core.

``tokens.npy`` holds every row's tokens end to end; each span array holds one value per row
(docs/CONTRACTS.md). The core writes and reads exactly ``_core.ARRAY_FILES``; the names below are
derived from it, so Python and Rust cannot disagree.
"""

from __future__ import annotations

from hrm_assets import _core
from hrm_assets.common.settings import TOKENS_FILE

ARRAY_FILES: tuple[str, ...] = tuple(_core.ARRAY_FILES)
"""Every array file of a tokenized folder, ``tokens.npy`` first."""

SPAN_FILES: tuple[str, ...] = tuple(name for name in ARRAY_FILES if name != TOKENS_FILE)
"""Every array of a tokenized folder but ``tokens.npy``: one entry per row."""

SPAN_FIELDS: tuple[str, ...] = tuple(name.removesuffix(".npy") for name in SPAN_FILES)
"""The span arrays' names (``inst_start, inst_len, resp_start, resp_len``), in the core's order:
the fields of a span table and the files of an epoch (``<name>.npy``)."""
