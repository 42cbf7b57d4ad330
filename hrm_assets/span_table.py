"""Every task's span rows as one table, checked and length-filtered in one pass over all rows.

A tokenized root holds thousands of tasks; doing each task's checks and filtering as a handful
of numpy calls costs more in call overhead than in arithmetic. Here the tasks' rows sit back to
back (task ``t`` owns rows ``bounds[t]:bounds[t + 1]``) and every rule is one vectorised
expression; per-task figures are segment sums. The functions take plain int64 arrays, so
:mod:`hrm_assets.sampling` keeps its ``Spans`` and messages and this module only computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def bounds_of(sizes) -> np.ndarray:
    """``[0, sizes[0], sizes[0] + sizes[1], ...]`` as int64: segment ``t`` of consecutive
    segments of these sizes is ``bounds[t]:bounds[t + 1]``."""
    bounds = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    return bounds


def segment_sums(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Exact int64 sums of ``values[bounds[t]:bounds[t + 1]]`` for every ``t`` (0 when empty)."""
    starts = np.asarray(bounds[:-1])
    sums = np.zeros(len(starts), dtype=np.int64)
    nonempty = np.diff(bounds) > 0
    if nonempty.any():
        # reduceat sums from each index to the next one given; empty segments are left out
        # (it would return their first value), so each sum ends where the next task starts.
        sums[nonempty] = np.add.reduceat(values, starts[nonempty], dtype=np.int64)
    return sums


def first_inconsistent_task(
    inst_start: np.ndarray,
    inst_len: np.ndarray,
    resp_start: np.ndarray,
    resp_len: np.ndarray,
    bounds: np.ndarray,
    token_counts: np.ndarray,
) -> int | None:
    """The first task whose spans are not all within its ``tokens.npy`` (negative values,
    values or span ends past its token count) or do not cover exactly its token count."""
    limit = np.repeat(token_counts, np.diff(bounds))
    bad = (inst_start < 0) | (inst_len < 0) | (resp_start < 0) | (resp_len < 0)
    for values in (inst_start, inst_len, resp_start, resp_len):
        bad |= values > limit
    # Only meaningful where the values are in range (else they may wrap); those rows are bad.
    bad |= inst_start + inst_len > limit
    bad |= resp_start + resp_len > limit
    candidates = []
    rows = np.flatnonzero(bad)
    if len(rows):
        candidates.append(int(np.searchsorted(bounds, rows[0], side="right")) - 1)
    covered = segment_sums(inst_len, bounds) + segment_sums(resp_len, bounds)
    mismatched = np.flatnonzero(covered != token_counts)
    if len(mismatched):
        candidates.append(int(mismatched[0]))
    return min(candidates) if candidates else None


@dataclass(frozen=True)
class LengthFilter:
    """The length rules applied to rows: which are kept, their (truncated) response lengths,
    and one mask per figure the analytics report."""

    keep: np.ndarray
    resp_len: np.ndarray
    dropped_short: np.ndarray
    dropped_long: np.ndarray
    truncated: np.ndarray
    short_after_truncate: np.ndarray
    dropped_short_after_truncate: np.ndarray


def filter_lengths(
    inst_len: np.ndarray,
    resp_len: np.ndarray,
    truncate: np.ndarray | bool,
    context_size: int,
    min_resp_length: int,
    drop_short_after_truncate: bool = False,
) -> LengthFilter:
    """data_io's length rules, row by row (``truncate``: per row, or one value for all).

    A row is dropped as short when ``resp_len < min_resp_length``; otherwise, with
    ``allowed = context_size - min(inst_len, context_size)``, truncate mode drops it when
    ``allowed < 1`` and else caps ``resp_len`` at ``allowed``; drop mode drops it when
    ``resp_len > allowed``. A truncated response can end up shorter than ``min_resp_length``:
    such rows are counted, and dropped only with ``drop_short_after_truncate``.
    """
    allowed = context_size - np.minimum(inst_len, context_size)
    long_enough = resp_len >= min_resp_length
    fits = np.where(truncate, allowed >= 1, resp_len <= allowed)
    kept_resp_len = np.where(truncate, np.minimum(resp_len, allowed), resp_len)
    keep = long_enough & fits
    short_after = keep & (kept_resp_len < min_resp_length)
    if drop_short_after_truncate:
        keep = keep & ~short_after
    return LengthFilter(
        keep=keep,
        resp_len=kept_resp_len,
        dropped_short=~long_enough,
        dropped_long=long_enough & ~fits,
        truncated=keep & (kept_resp_len < resp_len),
        short_after_truncate=short_after,
        dropped_short_after_truncate=(
            short_after if drop_short_after_truncate else np.zeros_like(short_after)
        ),
    )
