"""Packing rows into fixed-length sequences: first-fit-decreasing, deterministic by seed.

The plan (:func:`pack_rows`) works on row lengths only:

1. A ``numpy.random.Generator(numpy.random.Philox(seed))`` (the sampler's generator) permutes
   the rows, then a stable sort orders them by length, longest first: rows of equal length come
   in the seed's order.
2. First fit: each row goes into the first (lowest-numbered) sequence with room for it,
   a new sequence when none has. A max segment tree over the sequences' free room finds that
   sequence in ``O(log sequences)``; consecutive rows of equal length go into one sequence
   together, as many as fit, which is what first fit does with them one by one.
3. The same generator then shuffles the order of the sequences, so a trainer reading them in
   order does not see the longest rows first. Within a sequence, rows keep the order they were
   placed in.

First-fit-decreasing uses at most ``11/9 OPT + 6/9`` sequences (Dósa, 2007). Rows longer than
the capacity cannot be packed: they are not part of the plan, and the caller counts and
reports them (:class:`PackingPlan` keeps their row numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PackingPlan:
    """Which rows go into which sequence, in output order.

    Sequence ``s`` holds rows ``row_order[sequence_offsets[s]:sequence_offsets[s + 1]]`` (row
    numbers of the packed table), back to back from its first token.
    """

    capacity: int
    row_order: np.ndarray
    sequence_offsets: np.ndarray
    sequence_tokens: np.ndarray
    overlong_rows: np.ndarray

    @property
    def sequences(self) -> int:
        return len(self.sequence_offsets) - 1

    @property
    def packed_tokens(self) -> int:
        return int(self.sequence_tokens.sum())

    @property
    def efficiency(self) -> float:
        """Filled tokens over capacity (1.0 when there is nothing to pack)."""
        capacity = self.sequences * self.capacity
        return self.packed_tokens / capacity if capacity else 1.0


def _first_fit(sizes: list[int], counts: list[int], capacity: int) -> tuple[list[int], list[int]]:
    """First fit of ``counts[g]`` items of size ``sizes[g]`` for each group in turn; returns
    runs ``(bins, run_counts)``: the items in order go ``run_counts[r]`` at a time into bin
    ``bins[r]``."""
    leaves = 1
    while leaves < 64:
        leaves *= 2
    tree = [capacity] * (2 * leaves)
    run_bins: list[int] = []
    run_counts: list[int] = []
    for size, count in zip(sizes, counts, strict=True):
        while count:
            if tree[1] < size:  # every leaf in use and full: twice as many bins
                old_leaves = leaves
                leaves *= 2
                grown = [capacity] * (2 * leaves)
                grown[leaves : leaves + old_leaves] = tree[old_leaves : 2 * old_leaves]
                for node in range(leaves - 1, 0, -1):
                    left, right = grown[2 * node], grown[2 * node + 1]
                    grown[node] = left if left >= right else right
                tree = grown
            node = 1
            while node < leaves:
                node *= 2
                if tree[node] < size:
                    node += 1
            room = tree[node]
            fitting = room // size
            placed = fitting if fitting < count else count
            run_bins.append(node - leaves)
            run_counts.append(placed)
            count -= placed
            value = room - placed * size
            tree[node] = value
            node //= 2
            while node:
                left, right = tree[2 * node], tree[2 * node + 1]
                best = left if left >= right else right
                if tree[node] == best:
                    break
                tree[node] = best
                node //= 2
    return run_bins, run_counts


def pack_rows(lengths: np.ndarray, capacity: int, seed: int) -> PackingPlan:
    """The first-fit-decreasing plan of rows of ``lengths`` tokens into sequences of
    ``capacity`` tokens, deterministic for a given ``seed`` (module docstring). Rows longer
    than ``capacity`` are left out and listed in ``overlong_rows``; a row of length 0 is an
    error (it has nothing to pack)."""
    if capacity < 1:
        raise ValueError(f"capacity must be at least 1, got {capacity}")
    lengths = np.asarray(lengths, dtype=np.int64)
    empty = np.flatnonzero(lengths <= 0)
    if len(empty):
        raise ValueError(f"row {int(empty[0])}: length {int(lengths[empty[0]])}, nothing to pack")
    rng = np.random.Generator(np.random.Philox(seed))
    order = rng.permutation(len(lengths))
    order = order[np.argsort(-lengths[order], kind="stable")]
    overlong_count = int(np.count_nonzero(lengths > capacity))
    overlong_rows = np.sort(order[:overlong_count])
    order = order[overlong_count:]
    sorted_lengths = lengths[order]
    if len(order):
        group_starts = np.flatnonzero(np.diff(sorted_lengths, prepend=-1))
        group_counts = np.diff(np.append(group_starts, len(order)))
        run_bins, run_counts = _first_fit(
            sorted_lengths[group_starts].tolist(), group_counts.tolist(), capacity
        )
        bin_of = np.repeat(np.asarray(run_bins, dtype=np.int64), run_counts)
        bins = int(bin_of.max()) + 1
    else:
        bin_of = np.zeros(0, dtype=np.int64)
        bins = 0
    shuffled = rng.permutation(bins)  # output sequence s is bin shuffled[s]
    rank = np.empty(bins, dtype=np.int64)
    rank[shuffled] = np.arange(bins, dtype=np.int64)
    placement = np.argsort(rank[bin_of], kind="stable")
    row_order = order[placement]
    per_sequence = np.bincount(rank[bin_of], minlength=bins)
    offsets = np.zeros(bins + 1, dtype=np.int64)
    np.cumsum(per_sequence, out=offsets[1:])
    tokens = np.bincount(rank[bin_of], weights=sorted_lengths, minlength=bins).astype(np.int64)
    return PackingPlan(
        capacity=capacity,
        row_order=row_order,
        sequence_offsets=offsets,
        sequence_tokens=tokens,
        overlong_rows=overlong_rows,
    )
