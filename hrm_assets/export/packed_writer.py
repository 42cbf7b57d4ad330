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

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hrm_assets.export.megatron import check_token_ids_fit, megatron_token_dtype
from hrm_assets.export.npy_stream import ManifestEntry, save_small_npy, streamed_npy
from hrm_assets.export.packing import PackingPlan
from hrm_assets.export.row_source import RowReader, RowTable
from hrm_assets.progress import progress_bar

PAD_ID = 0
# Tokens per chunk of sequences written at once (times about 10 bytes across the arrays).
CHUNK_TOKENS = 1 << 22
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


def packed_chunk(
    batch_tokens: np.ndarray,
    lengths: np.ndarray,
    inst_lengths: np.ndarray,
    rows_per_sequence: np.ndarray,
    capacity: int,
    token_dtype: np.dtype,
) -> dict[str, np.ndarray]:
    """The four ``(sequences, capacity)`` arrays of consecutive sequences holding
    ``rows_per_sequence`` rows each, from those rows' tokens back to back (``batch_tokens``)
    and their lengths and instruction lengths."""
    sequences = len(rows_per_sequence)
    rows = len(lengths)
    sequence_of_row = np.repeat(np.arange(sequences, dtype=np.int64), rows_per_sequence)
    row_ends = np.cumsum(lengths)
    row_starts = row_ends - lengths
    first_row = np.zeros(sequences, dtype=np.int64)
    np.cumsum(rows_per_sequence[:-1], out=first_row[1:])
    # Where each row starts in the flattened chunk: its sequence's first column plus the
    # lengths of the rows before it in that sequence.
    sequence_base = row_starts[np.minimum(first_row, max(rows - 1, 0))] if rows else first_row
    destination = sequence_of_row * capacity + row_starts - sequence_base[sequence_of_row]
    within_row = np.arange(int(row_ends[-1]) if rows else 0, dtype=np.int64) - np.repeat(
        row_starts, lengths
    )
    positions = np.repeat(destination, lengths) + within_row
    rank_in_sequence = np.arange(rows, dtype=np.int64) - first_row[sequence_of_row]
    shape = sequences * capacity
    tokens = np.full(shape, PAD_ID, dtype=token_dtype)
    tokens[positions] = batch_tokens
    loss_mask = np.zeros(shape, dtype=ARRAY_DTYPES["loss_mask"])
    loss_mask[positions] = within_row >= np.repeat(inst_lengths, lengths)
    position_ids = np.zeros(shape, dtype=ARRAY_DTYPES["position_ids"])
    position_ids[positions] = within_row
    segment_ids = np.zeros(shape, dtype=ARRAY_DTYPES["segment_ids"])
    segment_ids[positions] = np.repeat(rank_in_sequence + 1, lengths)
    return {
        "tokens": tokens,
        "loss_mask": loss_mask,
        "position_ids": position_ids,
        "segment_ids": segment_ids,
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
    streams = {
        name: streamed_npy(folder / f"{name}.npy", dtype, shape) for name, dtype in dtypes.items()
    }
    per_chunk = max(1, chunk_tokens // capacity)
    rows_per_sequence = np.diff(plan.sequence_offsets)
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
                batch = reader.read(rows)
                check_token_ids_fit(batch.tokens, batch.lengths, rows, token_dtype, table)
                arrays = packed_chunk(
                    batch.tokens,
                    batch.lengths,
                    batch.inst_lengths,
                    rows_per_sequence[first:end],
                    capacity,
                    token_dtype,
                )
                for name, stream in streams.items():
                    stream.write(arrays[name])
                bar.update(end - first)
    except BaseException:
        for stream in streams.values():
            stream.abandon()
        raise
    files = {f"{name}.npy": stream.close() for name, stream in streams.items()}
    files["row_index.npy"] = save_small_npy(folder / "row_index.npy", plan.row_order)
    files["sequence_offsets.npy"] = save_small_npy(
        folder / "sequence_offsets.npy", plan.sequence_offsets
    )
    files["overlong_rows.npy"] = save_small_npy(folder / "overlong_rows.npy", plan.overlong_rows)
    return PackedExport(token_dtype=token_dtype, files=files)
