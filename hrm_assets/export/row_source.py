"""The rows an export writes, and reading their tokens a chunk at a time.

A row is one instruction span followed by its response span, with data_io's framing as the
tokenized and sampled arrays hold them (``[BOQ, tags..., instruction..., EOQ]`` then
``[response..., EOA]``, the response possibly truncated by the sampler's ``long_context``
rule). Two sources:

- a sampled folder's epoch: ``tokens.npy`` and ``epoch_N/{inst,resp}_{start,len}.npy``, rows in
  the epoch's (shuffled) order;
- a whole tokenized root: every task folder in sorted name order (the sampler's order), every
  row of it in file order, untruncated.

A :class:`RowTable` holds only the spans (four int64 per row), never tokens; a
:class:`RowReader` gathers the tokens of a chunk of rows from memory-mapped token files, so
the memory an export needs is the index plus one chunk, whatever the corpus size.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hrm_assets._core import copy_byte_ranges
from hrm_assets.common.manifest import MANIFEST_FILE, SAMPLED_METADATA_FILE
from hrm_assets.common.npy_files import (
    NpyFileError,
    NpyLayout,
    load_integers_quickly,
    npy_layout_quickly,
)
from hrm_assets.contracts.spans import SPAN_FIELDS
from hrm_assets.sampling.datacard.verification import verify_sampled_folder
from hrm_assets.sampling.sampler import (
    TOKENS_FILE,
    SamplingError,
    load_spans,
    load_tokenizer_info,
    task_directories,
)
from hrm_assets.tokenization.identity import refusal, tokenized_input_problems
from hrm_assets.tokenization.snapshot import SnapshotError, tokenized_snapshot

EPOCH_DIR = re.compile(r"epoch_(\d+)")
# Token files kept mapped at once while gathering (a corpus has thousands of task files).
OPEN_TOKEN_FILES = 64


class RowSourceError(ValueError):
    """The rows cannot be read as given; the message names the file, the row and the field."""


@dataclass(frozen=True)
class TokenFile:
    """One ``tokens.npy`` rows point into, and what its rows are called in reports."""

    path: Path
    layout: NpyLayout
    name: str


@dataclass(frozen=True)
class RowTable:
    """Every row to export, as spans into token files (int64 arrays of one length).

    File ``f`` owns rows ``row_bounds[f]:row_bounds[f + 1]``; spans are offsets in its tokens.
    """

    description: str
    token_files: list[TokenFile]
    row_bounds: np.ndarray
    inst_start: np.ndarray
    inst_len: np.ndarray
    resp_start: np.ndarray
    resp_len: np.ndarray
    tokenizer_info: dict[str, Any]
    # The sampler's context_size (metadata.json's max_seq_len); None for a tokenized root.
    context_size: int | None = None
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return len(self.inst_len)

    @property
    def row_lengths(self) -> np.ndarray:
        return self.inst_len + self.resp_len

    def row_lengths_of(self, rows: np.ndarray) -> np.ndarray:
        return self.inst_len[rows] + self.resp_len[rows]

    @property
    def vocab_size(self) -> int | None:
        value = self.tokenizer_info.get("vocab_size")
        return None if value is None else int(value)

    def file_of_rows(self, rows: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.row_bounds, rows, side="right") - 1

    def file_rows(self) -> list[dict[str, Any]]:
        """Per token file: its name and its rows' range in this table (for reports)."""
        return [
            {
                "name": token_file.name,
                "first_row": int(self.row_bounds[index]),
                "rows": int(self.row_bounds[index + 1] - self.row_bounds[index]),
            }
            for index, token_file in enumerate(self.token_files)
        ]


def _span_problem(
    spans: dict[str, np.ndarray], token_count: int, where: dict[str, str]
) -> str | None:
    """The first row whose spans are negative, empty where a token is required, or past the
    ``token_count`` tokens, as a message naming the file (``where[field]``), row and field."""
    for name in SPAN_FIELDS:
        negative = np.flatnonzero(spans[name] < 0)
        if len(negative):
            row = int(negative[0])
            return f"{where[name]}: row {row}: {name} is negative ({int(spans[name][row])})"
    for kind in ("inst", "resp"):
        start, length = spans[f"{kind}_start"], spans[f"{kind}_len"]
        past = np.flatnonzero(start + length > token_count)
        if len(past):
            row = int(past[0])
            return (
                f"{where[f'{kind}_len']}: row {row}: {kind}_start + {kind}_len = "
                f"{int(start[row] + length[row])}, past the {token_count} tokens of {TOKENS_FILE}"
            )
    empty = np.flatnonzero(spans["inst_len"] + spans["resp_len"] == 0)
    if len(empty):
        row = int(empty[0])
        return f"{where['inst_len']}: row {row}: inst_len and resp_len are both 0 (an empty row)"
    return None


def _load_epoch_array(path: Path) -> np.ndarray:
    try:
        array = load_integers_quickly(str(path))
    except NpyFileError as exc:
        raise RowSourceError(str(exc)) from None
    if array.dtype == np.uint64:
        return array.view(np.int64)  # past 2**63 turns negative, refused as out of range
    return array.astype(np.int64)


def sampled_epochs(sampled_dir: Path) -> list[int]:
    """The epoch numbers of a sampled folder (``epoch_N`` folders), sorted."""
    sampled_dir = Path(sampled_dir)
    if not sampled_dir.is_dir():
        raise RowSourceError(f"{sampled_dir}: not a sampled folder (no such directory)")
    found = []
    for entry in sampled_dir.iterdir():
        match = EPOCH_DIR.fullmatch(entry.name)
        if match and entry.is_dir():
            found.append(int(match[1]))
    return sorted(found)


def _sampled_metadata(sampled_dir: Path) -> dict[str, Any]:
    path = sampled_dir / SAMPLED_METADATA_FILE
    try:
        metadata = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise RowSourceError(f"{path}: missing (not a sampled folder?)") from None
    except (OSError, ValueError) as exc:
        raise RowSourceError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("tokenizer_info"), dict):
        raise RowSourceError(f"{path}: expected an object with a tokenizer_info object")
    max_seq_len = metadata.get("max_seq_len")
    if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int) or max_seq_len < 2:
        raise RowSourceError(
            f"{path}: max_seq_len must be a whole number >= 2, got {max_seq_len!r}"
        )
    return metadata


def _token_file(path: Path, name: str) -> TokenFile:
    try:
        layout = npy_layout_quickly(str(path))
    except NpyFileError as exc:
        raise RowSourceError(str(exc)) from None
    return TokenFile(path=path, layout=layout, name=name)


def sampled_epoch_rows(sampled_dir: Path, epoch: int) -> RowTable:
    """The rows of ``epoch_<epoch>`` of a sampled folder, in the epoch's order.

    Errors (:class:`RowSourceError`) name the file, the row and the field: a missing epoch
    (listing those present), span arrays of different lengths, a negative value, a span past
    the end of ``tokens.npy``, an empty row.
    """
    sampled_dir = Path(sampled_dir)
    metadata = _sampled_metadata(sampled_dir)
    epoch_dir = sampled_dir / f"epoch_{epoch}"
    if not epoch_dir.is_dir():
        present = sampled_epochs(sampled_dir)
        raise RowSourceError(f"{epoch_dir}: no such epoch (the folder has epochs {present})")
    tokens = _token_file(sampled_dir / TOKENS_FILE, TOKENS_FILE)
    spans = {name: _load_epoch_array(epoch_dir / f"{name}.npy") for name in SPAN_FIELDS}
    lengths = {name: len(array) for name, array in spans.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name}.npy={n}" for name, n in lengths.items())
        raise RowSourceError(f"{epoch_dir}: span arrays have different lengths ({described})")
    where = {name: str(epoch_dir / f"{name}.npy") for name in SPAN_FIELDS}
    problem = _span_problem(spans, tokens.layout.length, where)
    if problem is not None:
        raise RowSourceError(problem)
    return RowTable(
        description=f"{sampled_dir} epoch {epoch}",
        token_files=[tokens],
        row_bounds=np.array([0, lengths["inst_len"]], dtype=np.int64),
        tokenizer_info=metadata["tokenizer_info"],
        context_size=int(metadata["max_seq_len"]),
        source={"kind": "sampled", "path": str(sampled_dir), "epoch": epoch},
        **spans,
    )


def tokenized_corpus_rows(tokenized_dir: Path) -> RowTable:
    """Every row of every task folder of a tokenized root: tasks in sorted name order (the
    sampler's), rows in file order, untruncated. Each task's arrays are checked as the
    sampler checks them; errors name the file."""
    tokenized_dir = Path(tokenized_dir)
    try:
        info = load_tokenizer_info(tokenized_dir)
        tasks = task_directories(tokenized_dir)
        loaded = [load_spans(task) for task in tasks]
    except SamplingError as exc:
        raise RowSourceError(str(exc)) from None
    token_files, counts = [], []
    for task, (spans, _) in zip(tasks, loaded, strict=True):
        token_files.append(_token_file(task / TOKENS_FILE, task.name))
        counts.append(len(spans.inst_len))
        empty = np.flatnonzero(spans.inst_len + spans.resp_len == 0)
        if len(empty):
            raise RowSourceError(
                f"{task / 'inst_len.npy'}: row {int(empty[0])}: inst_len and resp_len are both 0 "
                f"(an empty row)"
            )
    bounds = np.zeros(len(tasks) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])

    def joined(name: str) -> np.ndarray:
        parts = [getattr(spans, name) for spans, _ in loaded]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    return RowTable(
        description=f"{tokenized_dir} (whole corpus)",
        token_files=token_files,
        row_bounds=bounds,
        tokenizer_info=info,
        source={"kind": "tokenized", "path": str(tokenized_dir)},
        **{name: joined(name) for name in SPAN_FIELDS},
    )


@dataclass(frozen=True)
class RowBatch:
    """The tokens of some rows back to back, each row's length and instruction length."""

    tokens: np.ndarray
    lengths: np.ndarray
    inst_lengths: np.ndarray


def source_dtype(table: RowTable) -> np.dtype:
    """One dtype that holds the ids of every token file of ``table`` (int64 when empty)."""
    dtypes = {token_file.layout.dtype for token_file in table.token_files}
    return np.result_type(*dtypes) if dtypes else np.dtype(np.int64)


class RowReader:
    """Gathers rows' tokens from a :class:`RowTable`'s token files, as ``dtype`` (default:
    :func:`source_dtype`, so nothing is cast).

    Token files are memory-mapped on first use, at most :data:`OPEN_TOKEN_FILES` at once
    (least recently used closed first). Use as a context manager.
    """

    def __init__(self, table: RowTable, dtype: np.dtype | None = None):
        self.table = table
        self.dtype = np.dtype(dtype) if dtype is not None else source_dtype(table)
        self._maps: OrderedDict[int, np.ndarray] = OrderedDict()

    def __enter__(self) -> RowReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._maps.clear()

    def _tokens_of(self, file_index: int) -> np.ndarray:
        mapped = self._maps.get(file_index)
        if mapped is None:
            token_file = self.table.token_files[file_index]
            layout = token_file.layout
            if layout.length == 0:
                mapped = np.zeros(0, dtype=layout.dtype)
            else:
                try:
                    # A plain ndarray view: slicing a memmap object costs microseconds each.
                    mapped = np.memmap(
                        token_file.path,
                        dtype=layout.dtype,
                        mode="r",
                        offset=layout.data_offset,
                        shape=(layout.length,),
                    ).view(np.ndarray)
                except (OSError, ValueError) as exc:
                    raise RowSourceError(f"{token_file.path}: cannot be read: {exc}") from None
            self._maps[file_index] = mapped
            while len(self._maps) > OPEN_TOKEN_FILES:
                self._maps.popitem(last=False)
        else:
            self._maps.move_to_end(file_index)
        return mapped

    def copy_rows(self, rows: np.ndarray, out: np.ndarray, destinations: np.ndarray) -> None:
        """Copy the tokens of each row of ``rows`` to ``out[destinations[i]:]`` (1-D ``out``).

        One slice copy per row (two where its response does not follow its instruction): rows
        come in any order, and a copy per row moves each token once, where a gather by index
        would first build an index of eight bytes per token.
        """
        table = self.table
        rows = np.asarray(rows, dtype=np.int64)
        destinations = np.asarray(destinations, dtype=np.int64)
        if len(table.token_files) == 1 and len(rows):
            tokens = self._tokens_of(0)
            if tokens.dtype == out.dtype and out.flags.c_contiguous:
                spans = (
                    table.inst_start[rows],
                    table.inst_len[rows],
                    table.resp_start[rows],
                    table.resp_len[rows],
                )
                self._copy_rows_as_bytes(tokens, out, spans, destinations)
                return
        columns = zip(
            table.inst_start[rows].tolist(),
            table.inst_len[rows].tolist(),
            table.resp_start[rows].tolist(),
            table.resp_len[rows].tolist(),
            destinations.tolist(),
            strict=True,
        )
        if len(table.token_files) == 1:
            tokens = self._tokens_of(0) if len(rows) else None
            for inst_start, inst_len, resp_start, resp_len, at in columns:
                if resp_start == inst_start + inst_len:
                    out[at : at + inst_len + resp_len] = tokens[inst_start : resp_start + resp_len]
                else:
                    out[at : at + inst_len] = tokens[inst_start : inst_start + inst_len]
                    at += inst_len
                    out[at : at + resp_len] = tokens[resp_start : resp_start + resp_len]
            return
        files = table.file_of_rows(rows).tolist()
        for file_index, (inst_start, inst_len, resp_start, resp_len, at) in zip(
            files, columns, strict=True
        ):
            tokens = self._tokens_of(file_index)
            out[at : at + inst_len] = tokens[inst_start : inst_start + inst_len]
            at += inst_len
            out[at : at + resp_len] = tokens[resp_start : resp_start + resp_len]

    @staticmethod
    def _copy_rows_as_bytes(
        tokens: np.ndarray,
        out: np.ndarray,
        spans: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        destinations: np.ndarray,
    ) -> None:
        # The copies as byte ranges computed up front (a row whose response follows its
        # instruction, as tokenization lays them out, is one range; others are two), copied by
        # the Rust core in one call: a slice assignment per row from Python cost about a
        # microsecond, more than the copy of a row of a few hundred tokens.
        inst_start, inst_len, resp_start, resp_len = spans
        apart = resp_start != inst_start + inst_len
        lengths = np.where(apart, inst_len, inst_len + resp_len)
        starts = np.concatenate([inst_start, resp_start[apart]])
        lengths = np.concatenate([lengths, resp_len[apart]])
        at = np.concatenate([destinations, destinations[apart] + inst_len[apart]])
        item = tokens.itemsize
        copy_byte_ranges(
            memoryview(tokens).cast("B"),
            memoryview(out).cast("B"),
            np.ascontiguousarray(starts * item, dtype=np.int64),
            np.ascontiguousarray(lengths * item, dtype=np.int64),
            np.ascontiguousarray(at * item, dtype=np.int64),
        )

    def read(self, rows: np.ndarray, buffer: np.ndarray | None = None) -> RowBatch:
        """The tokens of ``rows`` (table row numbers, any order) back to back, in that order;
        in the front of ``buffer`` (of this reader's dtype) when it is large enough."""
        table = self.table
        rows = np.asarray(rows, dtype=np.int64)
        inst_len = table.inst_len[rows]
        lengths = inst_len + table.resp_len[rows]
        ends = np.cumsum(lengths)
        total = int(ends[-1]) if len(rows) else 0
        if buffer is not None and buffer.dtype == self.dtype and len(buffer) >= total:
            out = buffer[:total]
        else:
            out = np.empty(total, dtype=self.dtype)
        self.copy_rows(rows, out, ends - lengths)
        return RowBatch(tokens=out, lengths=lengths, inst_lengths=inst_len)


def _manifest_bytes(folder: Path) -> bytes | None:
    try:
        return (folder / MANIFEST_FILE).read_bytes()
    except FileNotFoundError:
        return None


@dataclass
class HeldRows:
    """A :class:`RowTable` and :meth:`confirm`, which raises :class:`RowSourceError` if what
    it was read from changed meanwhile. Call it after the last read and before publishing."""

    table: RowTable
    _confirm: Callable[[], None]

    def confirm(self) -> None:
        self._confirm()


@contextlib.contextmanager
def held_rows(
    *, sampled_dir: Path | None = None, epoch: int = 0, tokenized_dir: Path | None = None
) -> Iterator[HeldRows]:
    """The rows of a sampled epoch (``sampled_dir``, ``epoch``) or of a whole tokenized root
    (``tokenized_dir``), held still while the block reads them.

    A tokenized root is held as the sampler holds it (shared locks on every task folder,
    :mod:`hrm_assets.tokenization.snapshot`), so a tokenizer waits. A sampled folder is replaced
    by the sampler as a whole by a rename: :meth:`HeldRows.confirm` compares its
    ``manifest.json`` with what it was before reading, and a folder replaced meanwhile (spans
    of one version, tokens of another) is a :class:`RowSourceError` telling to export again.
    """
    if (sampled_dir is None) == (tokenized_dir is None):
        raise ValueError("give exactly one of sampled_dir and tokenized_dir")
    if tokenized_dir is not None:
        try:
            with tokenized_snapshot(Path(tokenized_dir), task_directories) as snapshot:

                def release() -> None:
                    try:
                        snapshot.release()
                    except SnapshotError as exc:
                        raise RowSourceError(str(exc)) from None

                problems = tokenized_input_problems(snapshot.task_dirs)
                if problems:
                    raise RowSourceError(
                        refusal(problems, "nothing was exported: tokenize again (hrm-verify)")
                    )
                yield HeldRows(tokenized_corpus_rows(Path(tokenized_dir)), release)
        except SnapshotError as exc:
            raise RowSourceError(str(exc)) from None
        return
    sampled_dir = Path(sampled_dir)
    before = _manifest_bytes(sampled_dir)
    # What is exported is proven first: an export's own manifest must not certify a damaged
    # input (the confirm below proves the folder was not replaced while it was read). A folder
    # without a manifest is data_io's: nothing to prove it against, read as it is.
    if before is not None:
        report = verify_sampled_folder(sampled_dir)
        if not report.ok:
            raise RowSourceError(
                refusal(report.problems, "nothing was exported: sample again (hrm-verify)")
            )

    def unchanged() -> None:
        if _manifest_bytes(sampled_dir) != before:
            raise RowSourceError(
                f"{sampled_dir}: replaced by another sampling run while being exported; "
                f"nothing was written: export again"
            )

    yield HeldRows(sampled_epoch_rows(sampled_dir, epoch), unchanged)
