"""Writing packed sequences: the arrays of a :class:`~hrm_assets.export.packing.PackingPlan`.

Every array has one row per sequence and ``capacity`` columns (``.npy``, C order):

- ``tokens.npy``: the rows' tokens back to back, then padding (id 0, as HRM-Text pads);
  dtype by Megatron's rule (uint16 below 65,500 ids, else int32);
- ``loss_mask.npy`` (uint8): 1 on response tokens (response and EOA), 0 on instruction tokens
  (BOQ, tags, instruction, EOQ) and padding. It marks the tokens that are loss *targets*, as
  HRM-Text's ``target_only`` labels do: predicting ``tokens[t]`` from ``tokens[:t]`` counts
  where ``loss_mask[t] == 1``. A row's first token (BOQ) is never a target, so no loss crosses
  from one row into the next;
- ``position_ids.npy`` (int32): 0, 1, ... restarting at each row, 0 on padding;
- ``segment_ids.npy`` (int32): 1, 2, ... for the rows of a sequence in order, 0 on padding.

Side arrays (int64): ``row_index.npy``, the source row of every packed row in output order,
and ``sequence_offsets.npy``, where each sequence's rows start in it (one more than the
sequences); ``overlong_rows.npy``, the rows longer than ``capacity``, not packed.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hrm_assets.common.progress import progress_bar
from hrm_assets.export.megatron import check_token_ids_fit, megatron_token_dtype
from hrm_assets.export.npy_stream import (
    ManifestEntry,
    StreamedFile,
    save_small_npy,
    streamed_npy,
)
from hrm_assets.export.packing import PackingPlan
from hrm_assets.export.row_source import RowReader, RowTable

PAD_ID = 0
# Tokens per chunk of sequences written at once (times about 10 bytes across the arrays).
CHUNK_TOKENS = 1 << 22
# Threads hashing and writing the four arrays while the next chunk is built: each file's chunks
# stay in order (a file waits for its previous chunk), different files proceed side by side.
WRITER_THREADS = 2
ARRAY_DTYPES = {
    "loss_mask": np.dtype(np.uint8),
    "position_ids": np.dtype(np.int32),
    "segment_ids": np.dtype(np.int32),
}


@dataclass(frozen=True)
class PackedExport:
    """What :func:`write_packed` wrote: the manifest entries of its files and the token dtype."""

    token_dtype: np.dtype
    files: dict[str, ManifestEntry]


def chunk_layout(
    lengths: np.ndarray, rows_per_sequence: np.ndarray, capacity: int
) -> tuple[np.ndarray, np.ndarray]:
    """For consecutive sequences holding ``rows_per_sequence`` rows each (rows of ``lengths``
    tokens, back to back from each sequence's first token): where each row starts in the
    flattened ``(sequences, capacity)`` chunk, and its segment id (1, 2, ... per sequence)."""
    sequences = len(rows_per_sequence)
    sequence_of_row = np.repeat(np.arange(sequences, dtype=np.int64), rows_per_sequence)
    first_row = np.zeros(sequences, dtype=np.int64)
    np.cumsum(rows_per_sequence[:-1], out=first_row[1:])
    row_starts = np.cumsum(lengths) - lengths
    if len(lengths):
        # Within a sequence a row starts after the rows before it in that sequence.
        before = row_starts - row_starts[first_row][sequence_of_row]
    else:
        before = row_starts
    destinations = sequence_of_row * capacity + before
    segment_ids = np.arange(len(lengths), dtype=np.int64) - first_row[sequence_of_row] + 1
    return destinations, segment_ids


def row_arrays(
    sequences: int,
    destinations: np.ndarray,
    lengths: np.ndarray,
    inst_lengths: np.ndarray,
    segment_ids: np.ndarray,
    capacity: int,
) -> dict[str, np.ndarray]:
    """``loss_mask``, ``position_ids`` and ``segment_ids`` (flat, ``sequences`` sequences of
    ``capacity`` tokens) for rows starting at ``destinations`` (in increasing order, back to
    back from each sequence's first token).

    A sequence is a run of constant values per row part (instruction, response) and then one
    of padding, so each array is one ``numpy.repeat`` of those runs: no index of eight bytes
    per token, no Python loop per row.
    """
    size = sequences * capacity
    rows = len(lengths)
    sequence_of_row = destinations // capacity
    filled = np.zeros(sequences, dtype=np.int64)
    np.add.at(filled, sequence_of_row, lengths)
    # Runs in flat order: each row's instruction and response, each sequence's padding after
    # its last row; row i's runs come after the padding runs of the sequences before its own.
    runs = 2 * rows + sequences
    instruction_run = 2 * np.arange(rows, dtype=np.int64) + sequence_of_row
    rows_up_to = np.zeros(sequences, dtype=np.int64)
    np.cumsum(np.bincount(sequence_of_row, minlength=sequences), out=rows_up_to)
    padding_run = 2 * rows_up_to + np.arange(sequences, dtype=np.int64)
    counts = np.empty(runs, dtype=np.int64)
    counts[instruction_run] = inst_lengths
    counts[instruction_run + 1] = lengths - inst_lengths
    counts[padding_run] = capacity - filled

    def repeated(instruction, response, padding, dtype) -> np.ndarray:
        values = np.empty(runs, dtype=dtype)
        values[instruction_run] = instruction
        values[instruction_run + 1] = response
        values[padding_run] = padding
        return np.repeat(values, counts)

    # Position = flat index - where the row starts; padding is cleared after.
    positions = np.arange(size, dtype=ARRAY_DTYPES["position_ids"])
    positions -= repeated(destinations, destinations, 0, positions.dtype)
    by_sequence = positions.reshape(sequences, capacity)
    for sequence, end in enumerate(filled.tolist()):
        by_sequence[sequence, end:] = 0
    return {
        "loss_mask": repeated(0, 1, 0, ARRAY_DTYPES["loss_mask"]),
        "position_ids": positions,
        "segment_ids": repeated(segment_ids, segment_ids, 0, ARRAY_DTYPES["segment_ids"]),
    }


def write_packed(
    table: RowTable,
    plan: PackingPlan,
    folder: Path,
    *,
    chunk_tokens: int = CHUNK_TOKENS,
    progress: bool = False,
) -> PackedExport:
    """Write ``plan``'s sequences of ``table``'s rows into ``folder`` (module docstring),
    ``chunk_tokens`` tokens of sequences at a time."""
    folder = Path(folder)
    token_dtype = megatron_token_dtype(table.vocab_size)
    capacity = plan.capacity
    shape = (plan.sequences, capacity)
    dtypes = {"tokens": token_dtype, **ARRAY_DTYPES}
    per_chunk = max(1, chunk_tokens // capacity)
    rows_per_sequence = np.diff(plan.sequence_offsets)
    with ThreadPoolExecutor(
        max_workers=WRITER_THREADS, thread_name_prefix="packed-writer"
    ) as writer:
        streams = {
            name: streamed_npy(folder / f"{name}.npy", dtype, shape, writer)
            for name, dtype in dtypes.items()
        }
        files = _write_sequences(
            table, plan, streams, token_dtype, per_chunk, rows_per_sequence, progress
        )
    files["row_index.npy"] = save_small_npy(folder / "row_index.npy", plan.row_order)
    files["sequence_offsets.npy"] = save_small_npy(
        folder / "sequence_offsets.npy", plan.sequence_offsets
    )
    files["overlong_rows.npy"] = save_small_npy(folder / "overlong_rows.npy", plan.overlong_rows)
    return PackedExport(token_dtype=token_dtype, files=files)


def _write_sequences(
    table: RowTable,
    plan: PackingPlan,
    streams: dict[str, StreamedFile],
    token_dtype: np.dtype,
    per_chunk: int,
    rows_per_sequence: np.ndarray,
    progress: bool,
) -> dict[str, ManifestEntry]:
    capacity = plan.capacity
    try:
        with (
            RowReader(table) as reader,
            progress_bar(
                progress, total=plan.sequences, desc="Packed sequences", unit="seq"
            ) as bar,
        ):
            for first in range(0, plan.sequences, per_chunk):
                end = min(first + per_chunk, plan.sequences)
                rows = plan.row_order[plan.sequence_offsets[first] : plan.sequence_offsets[end]]
                lengths = table.row_lengths_of(rows)
                destinations, segment_ids = chunk_layout(
                    lengths, rows_per_sequence[first:end], capacity
                )
                size = (end - first) * capacity
                arrays = {"tokens": np.full(size, PAD_ID, dtype=token_dtype)}
                if np.can_cast(reader.dtype, token_dtype, "safe"):
                    reader.copy_rows(rows, arrays["tokens"], destinations)
                else:  # read as stored, check every id fits, then place
                    batch = reader.read(rows)
                    check_token_ids_fit(batch.tokens, batch.lengths, rows, token_dtype, table)
                    starts = np.cumsum(lengths) - lengths
                    for at, start, length in zip(
                        destinations.tolist(), starts.tolist(), lengths.tolist(), strict=True
                    ):
                        arrays["tokens"][at : at + length] = batch.tokens[start : start + length]
                arrays.update(
                    row_arrays(
                        end - first,
                        destinations,
                        lengths,
                        table.inst_len[rows],
                        segment_ids,
                        capacity,
                    )
                )
                for name, stream in streams.items():
                    stream.write(arrays[name])
                bar.update(end - first)
        return {f"{name}.npy": stream.close() for name, stream in streams.items()}
    except BaseException:
        for stream in streams.values():
            stream.abandon()
        raise
