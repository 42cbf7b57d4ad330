"""Every task's span rows as one table, checked and length-filtered in one pass over all rows.

A tokenized root holds thousands of tasks; doing each task's checks and filtering as a handful
of numpy calls costs more in call overhead than in arithmetic. Here the tasks' rows sit back to
back (task ``t`` owns rows ``bounds[t]:bounds[t + 1]``) and every rule is one vectorised
expression; per-task figures are segment sums. The functions take plain int64 arrays, so
:mod:`hrm_assets.sampling.task_folders` keeps its ``Spans`` and messages and this module only
computes.

The span rule (:func:`row_flags`) is stated here and nowhere else: the sampler applies it to
the tokenized folders it reads, and :mod:`hrm_assets.checks.consistency` to tokenized folders and
sampled epochs, for the asset checks and ``hrm-verify``.
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


@dataclass(frozen=True)
class RowFlags:
    """Per row, which part of the layout rule (:func:`row_flags`) it breaks."""

    out_of_range: np.ndarray  # a value negative or past the token count, or a span ending past it
    detached: np.ndarray  # the response does not start right where the instruction ends
    apart: np.ndarray  # the row does not start where the previous one ends (first row: at 0)

    @property
    def bad(self) -> np.ndarray:
        return self.out_of_range | self.detached | self.apart


def row_flags(
    inst_start: np.ndarray,
    inst_len: np.ndarray,
    resp_start: np.ndarray,
    resp_len: np.ndarray,
    bounds: np.ndarray,
    token_counts: np.ndarray,
    back_to_back: bool = True,
) -> RowFlags:
    """The tokenized layout, row by row (int64 arrays; task ``t`` owns rows
    ``bounds[t]:bounds[t + 1]`` and has ``token_counts[t]`` tokens).

    A task's rows lie back to back in its ``tokens.npy``, as data_io's tokenizer writes them:
    the first row starts at 0, each response right after its instruction, each row right
    after the previous one. So spans neither overlap nor leave gaps, which a total alone (the
    lengths summing to the token count) does not show.

    A sampled epoch keeps the first two parts and not the third (``back_to_back=False``): its
    rows are drawn in a shuffled order and a truncated response ends early, but every row is
    still within ``tokens.npy`` and its response still starts where its instruction ends.
    """
    limit = np.repeat(np.asarray(token_counts, dtype=np.int64), np.diff(bounds))
    out_of_range = (inst_start < 0) | (inst_len < 0) | (resp_start < 0) | (resp_len < 0)
    for values in (inst_start, inst_len, resp_start, resp_len):
        out_of_range |= values > limit
    # Sums are meaningful only where the values are in range (else they may wrap); those rows
    # are out of range already.
    out_of_range |= (inst_start + inst_len > limit) | (resp_start + resp_len > limit)
    apart = np.zeros(len(inst_start), dtype=bool)
    if back_to_back:
        expected_start = np.zeros_like(inst_start)
        expected_start[1:] = (resp_start + resp_len)[:-1]
        firsts = np.asarray(bounds[:-1])[np.diff(bounds) > 0]
        expected_start[firsts] = 0
        apart = inst_start != expected_start
    return RowFlags(
        out_of_range=out_of_range,
        detached=resp_start != inst_start + inst_len,
        apart=apart,
    )


def first_inconsistent_task(
    inst_start: np.ndarray,
    inst_len: np.ndarray,
    resp_start: np.ndarray,
    resp_len: np.ndarray,
    bounds: np.ndarray,
    token_counts: np.ndarray,
) -> int | None:
    """The first task whose rows break the layout (:func:`row_flags`) or do not cover exactly
    its token count."""
    flags = row_flags(inst_start, inst_len, resp_start, resp_len, bounds, token_counts)
    candidates = []
    rows = np.flatnonzero(flags.bad)
    if len(rows):
        candidates.append(int(np.searchsorted(bounds, rows[0], side="right")) - 1)
    covered = segment_sums(inst_len, bounds) + segment_sums(resp_len, bounds)
    mismatched = np.flatnonzero(covered != np.asarray(token_counts, dtype=np.int64))
    if len(mismatched):
        candidates.append(int(mismatched[0]))
    return min(candidates) if candidates else None


def span_layout_problem(
    inst_start: np.ndarray,
    inst_len: np.ndarray,
    resp_start: np.ndarray,
    resp_len: np.ndarray,
    token_count: int,
) -> str | None:
    """What is wrong with one task's spans (int64, of equal lengths) against its
    ``token_count`` tokens, as a message naming the first bad row; ``None`` when they follow
    the layout (:func:`row_flags`) and cover exactly ``token_count`` tokens."""
    spans = (inst_start, inst_len, resp_start, resp_len)
    problem = _first_row_problem(spans, token_count, back_to_back=True)
    if problem is not None:
        return problem
    covered = int(inst_len.sum()) + int(resp_len.sum())
    if covered != token_count:
        return f"tokens.npy has {token_count} tokens but the spans cover {covered}"
    return None


def epoch_span_problem(
    inst_start: np.ndarray,
    inst_len: np.ndarray,
    resp_start: np.ndarray,
    resp_len: np.ndarray,
    token_count: int,
) -> str | None:
    """What is wrong with a sampled epoch's spans (int64, of equal lengths) against the
    ``token_count`` tokens of its folder's ``tokens.npy``, naming the first bad row; ``None``
    when every row is within them with its response right after its instruction
    (:func:`row_flags` without ``back_to_back``)."""
    return _first_row_problem((inst_start, inst_len, resp_start, resp_len), token_count, False)


def _first_row_problem(spans: tuple, token_count: int, back_to_back: bool) -> str | None:
    inst_start, inst_len, resp_start, resp_len = spans
    bounds = bounds_of([len(inst_start)])
    flags = row_flags(*spans, bounds, np.array([token_count]), back_to_back=back_to_back)
    bad = np.flatnonzero(flags.bad)
    if not len(bad):
        return None
    row = int(bad[0])
    starts = {"inst": int(inst_start[row]), "resp": int(resp_start[row])}
    lengths = {"inst": int(inst_len[row]), "resp": int(resp_len[row])}
    if flags.out_of_range[row]:
        for kind in ("inst", "resp"):
            for name, value in ((f"{kind}_start", starts[kind]), (f"{kind}_len", lengths[kind])):
                if value < 0:
                    return f"row {row}: {name} is negative ({value})"
        for kind in ("inst", "resp"):
            end = starts[kind] + lengths[kind]
            if end > token_count:
                return (
                    f"row {row}: {kind} span ends at {end}, past the {token_count} tokens "
                    f"of tokens.npy"
                )
    if flags.detached[row]:
        return (
            f"row {row}: the response starts at {starts['resp']}, not where its "
            f"instruction ends ({starts['inst'] + lengths['inst']})"
        )
    if row == 0:
        return f"row 0: starts at {starts['inst']}, not at 0; rows lie back to back in tokens.npy"
    previous_end = int(resp_start[row - 1] + resp_len[row - 1])
    kind = "overlaps the previous row" if starts["inst"] < previous_end else "leaves a gap"
    return (
        f"row {row}: starts at {starts['inst']} but row {row - 1} ends at {previous_end} "
        f"(it {kind}); rows lie back to back in tokens.npy"
    )


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
