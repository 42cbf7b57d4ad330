"""Megatron-LM indexed datasets (``MMIDIDX`` version 1): writing them, and reading them back.

``<prefix>.bin`` holds every sequence's tokens back to back in one dtype; ``<prefix>.idx`` is
(all little-endian)::

    b"MMIDIDX\\x00\\x00"      9 bytes, magic
    version                  uint64, 1
    dtype code               uint8 (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64,
                             7 float32, 8 uint16)
    sequence_count           uint64
    document_count           uint64 (the length of document_indices below)
    sequence_lengths         int32[sequence_count], tokens per sequence
    sequence_pointers        int64[sequence_count], byte offset of each sequence in .bin
    document_indices         int64[document_count], 0 then the sequence index ending each document

which is what megatron-core's ``IndexedDatasetBuilder`` writes and its ``IndexedDataset`` reads
(``megatron/core/datasets/indexed_dataset.py``; ``tests/export/test_export_megatron.py`` reads our
export with it). The token dtype follows Megatron's ``DType.optimal_dtype(vocab_size)``:
uint16 below 65,500 ids, else int32.

Here one row (instruction then response, data_io's framing) is one sequence and one document,
so ``document_indices`` is ``0, 1, ..., rows``. Megatron has no place for the instruction /
response boundary, so ``<prefix>.response_start.npy`` (int32, one per sequence) holds where
each sequence's response starts: its tokens from there on are the loss targets of HRM-Text's
``target_only`` training.
"""

from __future__ import annotations

import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hrm_assets.common.progress import progress_bar
from hrm_assets.export.npy_stream import ManifestEntry, StreamedFile, save_small_npy
from hrm_assets.export.row_source import RowReader, RowTable

INDEX_MAGIC = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
DTYPE_CODES = {
    np.dtype(np.uint8): 1,
    np.dtype(np.int8): 2,
    np.dtype(np.int16): 3,
    np.dtype(np.int32): 4,
    np.dtype(np.int64): 5,
    np.dtype(np.float64): 6,
    np.dtype(np.float32): 7,
    np.dtype(np.uint16): 8,
}
# Megatron's DType.optimal_dtype: uint16 when the vocabulary has fewer ids than this.
UINT16_VOCAB_LIMIT = 65500
DEFAULT_PREFIX = "text_document"
BIN_SUFFIX = ".bin"
IDX_SUFFIX = ".idx"
RESPONSE_START_SUFFIX = ".response_start.npy"
# Tokens gathered and written per chunk: a few MiB in flight whatever the corpus.
CHUNK_TOKENS = 1 << 22


class IndexedDatasetError(ValueError):
    """A file is not a readable Megatron indexed dataset; the message names it."""


def megatron_token_dtype(vocab_size: int | None) -> np.dtype:
    """Megatron's rule (``DType.optimal_dtype``): uint16 if ``vocab_size < 65500``, else int32
    (also when the vocabulary size is unknown)."""
    if vocab_size is not None and vocab_size < UINT16_VOCAB_LIMIT:
        return np.dtype(np.uint16)
    return np.dtype(np.int32)


def index_bytes(lengths: np.ndarray, dtype: np.dtype, document_indices: np.ndarray) -> bytes:
    """The whole ``.idx`` file for sequences of ``lengths`` tokens of ``dtype``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) and (lengths.min() < 0 or lengths.max() > np.iinfo(np.int32).max):
        raise ValueError("sequence lengths must fit int32 and not be negative")
    pointers = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1] * np.dtype(dtype).itemsize, out=pointers[1:])
    return b"".join(
        [
            INDEX_MAGIC,
            struct.pack("<Q", INDEX_VERSION),
            struct.pack("<B", DTYPE_CODES[np.dtype(dtype)]),
            struct.pack("<Q", len(lengths)),
            struct.pack("<Q", len(document_indices)),
            lengths.astype("<i4").tobytes(),
            pointers.astype("<i8").tobytes(),
            np.asarray(document_indices, dtype="<i8").tobytes(),
        ]
    )


def row_chunks(lengths: np.ndarray, chunk_tokens: int) -> list[tuple[int, int]]:
    """Consecutive ``(first, end)`` row ranges of about ``chunk_tokens`` tokens each (a row
    longer than that is a chunk of its own)."""
    ends = np.cumsum(lengths, dtype=np.int64)
    chunks, first = [], 0
    while first < len(lengths):
        before = int(ends[first - 1]) if first else 0
        end = int(np.searchsorted(ends, before + chunk_tokens, side="right"))
        end = max(end, first + 1)
        chunks.append((first, end))
        first = end
    return chunks


@dataclass(frozen=True)
class MegatronExport:
    """What :func:`write_megatron` wrote: its files' manifest entries and figures."""

    prefix: str
    dtype: np.dtype
    sequences: int
    tokens: int
    response_tokens: int
    files: dict[str, ManifestEntry]


def write_megatron(
    table: RowTable,
    folder: Path,
    *,
    prefix: str = DEFAULT_PREFIX,
    chunk_tokens: int = CHUNK_TOKENS,
    progress: bool = False,
) -> MegatronExport:
    """Write ``table``'s rows into ``folder`` as ``<prefix>.bin``, ``<prefix>.idx`` and
    ``<prefix>.response_start.npy`` (one sequence and one document per row, in table order).

    Tokens are gathered and written ``chunk_tokens`` at a time. Token ids that do not fit the
    dtype (a vocabulary larger than ``tokenizer_info.vocab_size`` claims) are an error naming
    the row.
    """
    folder = Path(folder)
    dtype = megatron_token_dtype(table.vocab_size)
    lengths = table.row_lengths
    total = int(lengths.sum())
    names = {kind: f"{prefix}{kind}" for kind in (BIN_SUFFIX, IDX_SUFFIX, RESPONSE_START_SUFFIX)}
    files: dict[str, ManifestEntry] = {}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="megatron-writer") as writer:
        bin_file = StreamedFile(folder / names[BIN_SUFFIX], dtype, total, writer=writer)
        files[names[BIN_SUFFIX]] = _write_tokens(table, bin_file, dtype, chunk_tokens, progress)
    index = index_bytes(lengths, dtype, np.arange(len(lengths) + 1, dtype=np.int64))
    index_file = StreamedFile(folder / names[IDX_SUFFIX], np.uint8, len(index))
    index_file.write(np.frombuffer(index, dtype=np.uint8))
    files[names[IDX_SUFFIX]] = index_file.close()
    files[names[RESPONSE_START_SUFFIX]] = save_small_npy(
        folder / names[RESPONSE_START_SUFFIX], table.inst_len.astype(np.int32)
    )
    return MegatronExport(
        prefix=prefix,
        dtype=dtype,
        sequences=len(lengths),
        tokens=total,
        response_tokens=int(table.resp_len.sum()),
        files=files,
    )


def _write_tokens(
    table: RowTable, bin_file: StreamedFile, dtype: np.dtype, chunk_tokens: int, progress: bool
) -> ManifestEntry:
    lengths = table.row_lengths
    try:
        with (
            RowReader(table) as reader,
            progress_bar(
                progress, total=bin_file.count, desc="Megatron .bin", unit="tok", unit_scale=True
            ) as bar,
        ):
            # Two buffers taken in turn: the writer thread may still hash and write the
            # previous chunk (a file has one chunk pending at most), and fresh memory for every
            # chunk cost as much in page faults as the copy itself.
            buffers = [np.empty(chunk_tokens, dtype=reader.dtype) for _ in range(2)]
            for number, (first, end) in enumerate(row_chunks(lengths, chunk_tokens)):
                rows = np.arange(first, end, dtype=np.int64)
                batch = reader.read(rows, buffers[number % 2])
                check_token_ids_fit(batch.tokens, batch.lengths, rows, dtype, table)
                bin_file.write(batch.tokens)
                bar.update(len(batch.tokens))
        return bin_file.close()
    except BaseException:
        bin_file.abandon()
        raise


def check_token_ids_fit(
    tokens: np.ndarray, lengths: np.ndarray, rows: np.ndarray, dtype: np.dtype, table: RowTable
) -> None:
    """Raise ``ValueError`` naming the row (of ``rows``, whose tokens back to back are
    ``tokens``) of the first token id that does not fit ``dtype``."""
    if np.can_cast(tokens.dtype, dtype, "safe") or not len(tokens):
        return
    limits = np.iinfo(dtype)
    if tokens.max() <= limits.max and tokens.min() >= limits.min:
        return
    bad = int(np.flatnonzero((tokens < limits.min) | (tokens > limits.max))[0])
    row = int(rows[int(np.searchsorted(np.cumsum(lengths), bad, side="right"))])
    raise ValueError(
        f"{table.description}: row {row}: token id {int(tokens[bad])} does not fit {dtype} "
        f"(tokenizer_info.vocab_size is {table.vocab_size})"
    )


@dataclass(frozen=True)
class IndexedDataset:
    """A Megatron indexed dataset read with numpy (our own reader, for checks and tests)."""

    dtype: np.dtype
    sequence_lengths: np.ndarray
    sequence_pointers: np.ndarray
    document_indices: np.ndarray
    tokens: np.ndarray  # the .bin, memory-mapped

    def __len__(self) -> int:
        return len(self.sequence_lengths)

    def __getitem__(self, index: int) -> np.ndarray:
        start = int(self.sequence_pointers[index]) // self.dtype.itemsize
        return self.tokens[start : start + int(self.sequence_lengths[index])]


def read_megatron(path_prefix: Path) -> IndexedDataset:
    """Read ``<path_prefix>.idx`` and map ``<path_prefix>.bin``; errors name the file."""
    idx_path = Path(f"{path_prefix}{IDX_SUFFIX}")
    bin_path = Path(f"{path_prefix}{BIN_SUFFIX}")
    try:
        data = idx_path.read_bytes()
    except OSError as exc:
        raise IndexedDatasetError(f"{idx_path}: cannot be read: {exc}") from None
    fixed = len(INDEX_MAGIC) + 8 + 1 + 8 + 8
    if len(data) < fixed or not data.startswith(INDEX_MAGIC):
        raise IndexedDatasetError(f"{idx_path}: not a Megatron index (no MMIDIDX header)")
    offset = len(INDEX_MAGIC)
    (version,) = struct.unpack_from("<Q", data, offset)
    (code,) = struct.unpack_from("<B", data, offset + 8)
    sequences, documents = struct.unpack_from("<QQ", data, offset + 9)
    if version != INDEX_VERSION:
        raise IndexedDatasetError(f"{idx_path}: version {version}, expected {INDEX_VERSION}")
    dtypes = {value: key for key, value in DTYPE_CODES.items()}
    if code not in dtypes:
        raise IndexedDatasetError(f"{idx_path}: unknown dtype code {code}")
    if len(data) != fixed + sequences * 12 + documents * 8:
        raise IndexedDatasetError(
            f"{idx_path}: {len(data)} bytes, but {sequences} sequences and {documents} "
            f"documents take {fixed + sequences * 12 + documents * 8}"
        )
    lengths = np.frombuffer(data, dtype="<i4", count=sequences, offset=fixed)
    pointers = np.frombuffer(data, dtype="<i8", count=sequences, offset=fixed + 4 * sequences)
    document_indices = np.frombuffer(
        data, dtype="<i8", count=documents, offset=fixed + 12 * sequences
    )
    dtype = dtypes[code]
    expected = int(lengths.sum(dtype=np.int64)) * dtype.itemsize
    size = bin_path.stat().st_size if bin_path.exists() else -1
    if size != expected:
        raise IndexedDatasetError(f"{bin_path}: {size} bytes, the index describes {expected}")
    tokens = np.memmap(bin_path, dtype=dtype, mode="r") if expected else np.zeros(0, dtype=dtype)
    return IndexedDataset(dtype, lengths, pointers, document_indices, tokens)
