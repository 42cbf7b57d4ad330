"""Drawing the sampled epochs as data_io does, and writing their index arrays.

One ``numpy.random.Generator(Philox(seed))``, used in data_io's order: per epoch, each task in
turn takes its rows from a permutation of its own rows, drawing a new permutation only when it
needs rows and its current one is used up; then the epoch's rows are shuffled with one more
permutation. Every epoch is written as one int64 ``.npy`` per span field, in the shuffled order.

Two implementations give the same bytes. The Rust core
(``rust_tokenizer/src/sample/epoch_draw.rs``, ``sample/philox.rs``) draws and writes without the
GIL while the tokens are being copied; it restates numpy's Philox and ``Generator.permutation``.
numpy does not promise its ``Generator`` streams across releases (NEP 19), so the Rust draw is
used only after it reproduced the installed numpy's permutations (checked once per process);
otherwise numpy draws, here in Python.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hrm_assets import _core
from hrm_assets.sampling.arrays import ManifestEntry, save_npy

# The Rust draw indexes rows with 32 bits (the table's, and an epoch's), so it also uses only
# numpy's 32-bit branch of bounded draws, the one the check below covers.
RUST_MAX_ROWS = 2**32 - 1

# Permutation sizes the check draws in a row: small ones, and one past a power of two (where the
# bounded draws reject the most).
CHECK_SIZES = (1, 2, 3, 10, 1000, 4097)
CHECK_SEED = 20240229


@dataclass
class EpochDraws:
    tokens: list[int]  # each epoch's instruction + response tokens
    hits: np.ndarray  # int64, per table row: how many times it was drawn over all epochs
    entries: dict[str, ManifestEntry]  # by path relative to the output folder
    engine: str  # "rust" or "numpy"


def philox_state(rng: np.random.Generator) -> tuple:
    """numpy's Philox state as the Rust core takes it."""
    state = rng.bit_generator.state
    return (
        state["state"]["counter"].tolist(),
        state["state"]["key"].tolist(),
        state["buffer"].tolist(),
        int(state["buffer_pos"]),
        bool(state["has_uint32"]),
        int(state["uinteger"]),
    )


@functools.cache
def rust_draw_matches_numpy() -> bool:
    """Whether the Rust core's permutations are this numpy's, draw for draw and state for state."""
    rng = np.random.Generator(np.random.Philox(CHECK_SEED))
    state = philox_state(rng)
    for size in CHECK_SIZES:
        permutation, state = _core.philox_permutation(state, size)
        if permutation != rng.permutation(size).tolist() or state != philox_state(rng):
            return False
    return True


def draw_epochs(
    staged: Path,
    fields: dict[str, np.ndarray],
    lengths: np.ndarray,
    tasks: Sequence[tuple[int, int]],
    epochs: int,
    seed: int,
    progress: Callable[[], None] | None = None,
) -> EpochDraws:
    """Draw ``epochs`` epochs and write ``staged/epoch_<n>/<field>.npy`` for each field.

    ``fields`` are int64 arrays of one value per kept row (tasks' rows back to back),
    ``lengths`` each row's tokens, ``tasks`` each task's ``(rows, rows_per_epoch)`` in table
    order; ``progress`` is called after each epoch.
    """
    epoch_rows = sum(per_epoch for _, per_epoch in tasks)
    largest = max(epoch_rows, sum(rows for rows, _ in tasks))
    if largest <= RUST_MAX_ROWS and rust_draw_matches_numpy():
        return _draw_in_rust(staged, fields, lengths, tasks, epochs, seed, progress)
    return _draw_with_numpy(staged, fields, lengths, tasks, epochs, seed, progress)


def _draw_in_rust(staged, fields, lengths, tasks, epochs, seed, progress) -> EpochDraws:
    hits = np.zeros(len(lengths), dtype=np.int64)
    tokens, written, _ = _core.write_epoch_arrays(
        str(staged),
        [(name, np.ascontiguousarray(values, dtype=np.int64)) for name, values in fields.items()],
        np.ascontiguousarray(lengths, dtype=np.int64),
        [(int(rows), int(per_epoch)) for rows, per_epoch in tasks],
        epochs,
        philox_state(np.random.Generator(np.random.Philox(seed))),
        hits,
        progress=progress,
    )
    entries = {relative: {"sha256": sha256, "size": size} for relative, size, sha256 in written}
    return EpochDraws(tokens=tokens, hits=hits, entries=entries, engine="rust")


class _RowCursor:
    """A task's walk through successive permutations of its rows, shared across epochs."""

    def __init__(self, rows: int):
        self.rows = rows
        self.permutation: np.ndarray | None = None
        self.position = 0

    def take(self, rng: np.random.Generator, count: int) -> Iterator[np.ndarray]:
        """Yield row indices, ``count`` in all; a new permutation is drawn only when needed."""
        remaining = count
        while remaining > 0:
            if self.permutation is None or self.position >= len(self.permutation):
                self.permutation = rng.permutation(self.rows)
                self.position = 0
            step = min(len(self.permutation) - self.position, remaining)
            yield self.permutation[self.position : self.position + step]
            self.position += step
            remaining -= step


def _draw_with_numpy(staged, fields, lengths, tasks, epochs, seed, progress) -> EpochDraws:
    if any(rows == 0 < per_epoch for rows, per_epoch in tasks):
        raise ValueError("a task with no rows cannot take rows")
    # Every field in one table, a line each: an epoch is one gather for all of them.
    names = list(fields)
    table = np.stack([np.asarray(fields[name], dtype=np.int64) for name in names])
    bases = np.cumsum([0] + [rows for rows, _ in tasks]).tolist()
    epoch_rows = sum(per_epoch for _, per_epoch in tasks)
    picked = np.empty(epoch_rows, dtype=np.int64)
    columns = np.empty((len(names), epoch_rows), dtype=np.int64)
    cursors = [_RowCursor(rows) for rows, _ in tasks]
    hits = np.zeros(len(lengths), dtype=np.int64)
    rng = np.random.Generator(np.random.Philox(seed))
    tokens_per_epoch: list[int] = []
    entries: dict[str, ManifestEntry] = {}
    for epoch in range(epochs):
        filled = 0
        for (_, per_epoch), base, cursor in zip(tasks, bases, cursors, strict=False):
            for rows in cursor.take(rng, per_epoch):
                np.add(rows, base, out=picked[filled : filled + len(rows)])
                filled += len(rows)
        # A row can come up twice in one epoch (repeat, or a new permutation): count each.
        drawn = np.bincount(picked, minlength=len(lengths))
        hits += drawn
        tokens_per_epoch.append(int(np.dot(drawn, lengths)))
        shuffled = picked[rng.permutation(epoch_rows)]
        np.take(table, shuffled, axis=1, out=columns)
        epoch_dir = staged / f"epoch_{epoch}"
        epoch_dir.mkdir()
        for name, column in zip(names, columns, strict=True):
            relative = f"{epoch_dir.name}/{name}.npy"
            entries[relative] = save_npy(staged / relative, column)
        if progress is not None:
            progress()
    return EpochDraws(tokens=tokens_per_epoch, hits=hits, entries=entries, engine="numpy")
