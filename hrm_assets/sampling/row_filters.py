"""The sampler's ``decontaminate`` and ``dedup`` options: which rows of the span table to leave
out, from the tokenized folders' contamination sidecars (docs/CONTAMINATION.md).

- ``decontaminate``: rows whose instruction or response shares a word n-gram with an
  evaluation set (the hits the tokenized step found);
- ``dedup``: every copy of a row (same normalized instruction and response) after the first,
  tasks taken in the sampler's order, rows in file order.

A row left out for both counts as contaminated. A task folder without sidecars (or, for
``decontaminate``, scanned against no evaluation set) is refused with a line saying what to
do: dropping nothing there would be silent. With both options off nothing is read and the
sampler's bytes are data_io's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hrm_assets.sampling.config import SamplingError


@dataclass(frozen=True)
class RowDrops:
    """Boolean masks over the rows of the span table (tasks back to back)."""

    contaminated: np.ndarray
    duplicate: np.ndarray
    """Duplicates that are not also contaminated."""

    @property
    def dropped(self) -> np.ndarray:
        return self.contaminated | self.duplicate


def row_drops(
    tokenized_path: Path,
    names: Sequence[str],
    bounds: np.ndarray,
    decontaminate: bool,
    dedup: bool,
) -> RowDrops | None:
    """The rows to leave out of tasks ``names`` (folders of ``tokenized_path``; task ``i``'s
    rows are ``bounds[i]:bounds[i + 1]`` of the table), or None when both options are off."""
    if not (decontaminate or dedup):
        return None
    from hrm_assets.contamination.duplicates import DuplicateCounter
    from hrm_assets.contamination.sidecar import read_sidecar

    total = int(bounds[-1])
    contaminated = np.zeros(total, dtype=bool)
    duplicate = np.zeros(total, dtype=bool)
    counter = DuplicateCounter()
    for index, name in enumerate(names):
        folder = Path(tokenized_path) / name
        sidecar = read_sidecar(folder)
        start, end = int(bounds[index]), int(bounds[index + 1])
        if sidecar is None or sidecar.rows != end - start:
            raise SamplingError(
                f"{folder}: no contamination sidecars for its {end - start} rows, which "
                "decontaminate and dedup read: tokenize it again (the tokenized step writes "
                "them unless HRM_TOKENIZE_CONTAMINATION=0), or turn both options off"
            )
        if decontaminate:
            if sidecar.label is None:
                raise SamplingError(
                    f"{folder}: tokenized before any evaluation set was saved, so never scanned: "
                    "materialize eval/* and tokenize again, or set decontaminate=false"
                )
            # Hits carry JSONL line numbers; the table holds rows (blank lines are none).
            rows = np.array(sidecar.hit_positions(), dtype=np.int64) - 1
            if rows.size and int(rows.max()) >= end - start:
                raise SamplingError(
                    f"{folder}: its hits number rows past its {end - start} rows (blank lines in "
                    "its cleaned file, sidecars written before they were recorded): remove the "
                    "folder and tokenize again, or set decontaminate=false"
                )
            contaminated[start + rows] = True
        if dedup:
            repeated = counter.add_keys(name, sidecar.keys())
            duplicate[start:end] = np.asarray(repeated, dtype=bool)
    return RowDrops(contaminated, duplicate & ~contaminated)
