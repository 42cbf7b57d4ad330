"""Consistency checks of outputs, shared by the asset checks and the tests.

Each function reads an output and returns a :class:`CheckReport`: ``problems`` is empty when
the output is sound. Arrays are streamed or memory-mapped, so checking a large folder does not
load it; tokenized folders are checked many at once (:func:`check_tokenized_folders`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hrm_assets.common.manifest import FileScan, scan_files
from hrm_assets.common.settings import METADATA_FILE, TOKENS_FILE
from hrm_assets.contracts.spans import SPAN_FIELDS

if TYPE_CHECKING:
    import numpy as np

MAX_PROBLEMS = 20


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    figures: dict[str, int | float | str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.problems

    def problem(self, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)


def check_cleaned_files(paths: list[Path]) -> CheckReport:
    """Every row is three strings with known tags; empty responses and instructions counted."""
    from hrm_assets.cleaning.rows import RowError, iter_cleaned_rows

    report = CheckReport()
    rows = empty_responses = empty_instructions = 0
    for path in paths:
        try:
            for row in iter_cleaned_rows(path):
                rows += 1
                empty_responses += not row.response
                empty_instructions += not row.instruction
        except RowError as error:
            report.problem(str(error))
    if not paths:
        report.problem("the source has no cleaned files")
    report.figures.update(
        files=len(paths),
        rows=rows,
        empty_responses=empty_responses,
        empty_instructions=empty_instructions,
    )
    return report


# Arrays below this size are read whole in one call (a batched run checks thousands of small
# folders, where numpy.load's per-file cost dominated); larger ones are mapped.
_READ_WHOLE_BELOW = 64 << 20


def _load(folder: Path, name: str) -> np.ndarray:
    import numpy as np

    from hrm_assets.common.npy_files import load_integers_quickly

    path = folder / f"{name}.npy"
    if path.stat().st_size < _READ_WHOLE_BELOW:
        return load_integers_quickly(str(path))
    return np.load(path, mmap_mode="r")


def _span_problem(spans: dict, token_count: int, sampled: bool) -> str | None:
    """The first problem of a task's spans (``sampled=False``: the tokenized layout,
    :func:`hrm_assets.sampling.span_table.span_layout_problem`) or of a sampled epoch's
    (:func:`~hrm_assets.sampling.span_table.epoch_span_problem`) against ``token_count``
    tokens; the rule itself is stated there only."""
    import numpy as np

    from hrm_assets.sampling.span_table import epoch_span_problem, span_layout_problem

    lengths = {name: len(spans[name]) for name in SPAN_FIELDS}
    if len(set(lengths.values())) != 1:
        return f"span arrays differ in length {lengths}"
    rule = epoch_span_problem if sampled else span_layout_problem
    return rule(
        *(np.asarray(spans[name]).astype(np.int64, copy=False) for name in SPAN_FIELDS),
        token_count,
    )


def span_problems(folder: Path) -> list[str]:
    """The span rule applied to an output folder, as ``hrm-verify`` does after its manifest
    check: a sampled folder's every ``epoch_N`` against its ``tokens.npy``, a tokenized
    folder's spans against its own; each problem names the folder. Nothing for a folder with
    neither layout (the manifest check reports what is missing)."""
    folder = Path(folder)
    epochs = sorted(path for path in folder.glob("epoch_*") if path.is_dir())
    targets = epochs if epochs else [folder]
    if not (folder / TOKENS_FILE).is_file():
        return []
    problems = []
    from hrm_assets.common.npy_files import npy_layout

    try:
        token_count = npy_layout(folder / TOKENS_FILE).length
        for target in targets:
            spans = {name: _load(target, name) for name in SPAN_FIELDS}
            problem = _span_problem(spans, token_count, sampled=bool(epochs))
            if problem is not None:
                problems.append(f"{target}: {problem}")
    except (OSError, ValueError) as error:
        problems.append(f"{folder}: spans unreadable: {error}")
    return problems


def sampled_token_problems(folder: Path, scans: Mapping[str, FileScan]) -> list[str]:
    """The token ids of a sampled folder against what its ``metadata.json`` announces: HRM-Text
    picks the dtype from ``tokenizer_info.vocab_size``
    (``hrm_assets.sampling.sampled_files.token_dtype``) and embeds every id, so ``tokens.npy``
    must have that dtype and every id must be below the vocabulary size. ``scans``: the
    folder's files as the manifest check read them."""
    from hrm_assets.sampling.sampled_files import token_dtype

    folder = Path(folder)
    tokens = scans.get(TOKENS_FILE)
    if tokens is None or tokens.descr is None:
        return []
    try:
        metadata = json.loads((folder / METADATA_FILE).read_bytes())
        vocab_size = metadata["tokenizer_info"]["vocab_size"]
    except (OSError, ValueError, KeyError, TypeError):
        return [f"{folder / METADATA_FILE}: tokenizer_info.vocab_size unreadable"]
    if vocab_size is None or isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        return []  # int32 tokens (data_io's rule); the sampler warned when it wrote them
    problems = []
    expected = token_dtype(vocab_size)
    if _dtype(tokens.descr) != expected:
        problems.append(
            f"{folder / TOKENS_FILE}: dtype {_dtype(tokens.descr)}, but tokenizer_info.vocab_size "
            f"{vocab_size} in {METADATA_FILE} makes HRM-Text read it as {expected}"
        )
    if tokens.max_value is not None and tokens.max_value >= vocab_size:
        problems.append(
            f"{folder / TOKENS_FILE}: token id {tokens.max_value} is outside the vocabulary "
            f"(tokenizer_info.vocab_size {vocab_size} in {METADATA_FILE})"
        )
    return problems


def check_tokenized_folder(folder: Path, vocab_size: int) -> CheckReport:
    """:func:`check_tokenized_folders` of one folder."""
    return check_tokenized_folders([folder], vocab_size)[0]


_TOKENIZED_ARRAYS = (TOKENS_FILE, *(f"{name}.npy" for name in SPAN_FIELDS))


def check_tokenized_folders(
    folders: Sequence[Path],
    vocab_size: int,
    scans: Sequence[Mapping[str, FileScan]] | None = None,
) -> list[CheckReport]:
    """One report per tokenized folder, in order: spans laid out as the tokenizer writes them
    (:func:`hrm_assets.sampling.span_table.span_layout_problem`), ids below the vocabulary,
    row count as recorded, dtypes, instructions of at least two tokens.

    Each array is read once by the Rust core: ``scans`` (per folder, its files already read by
    relative name, as :func:`~hrm_assets.common.manifest.verify_folders` leaves them) give the
    tokens' type, count and largest id, and whatever they lack is scanned here; the spans of
    all the folders are read in one call and the span rule applied once over all their rows.
    A folder that reader does not take (an array missing, truncated or not a plain 1-D integer
    ``.npy``, spans of unequal lengths, ``metadata.json`` unreadable) is read with numpy
    instead, whose messages name what is wrong; the reports are the same either way.
    """
    folders = [Path(folder) for folder in folders]
    found = _scanned_arrays(folders, scans)
    reports: list[CheckReport | None] = [None] * len(folders)
    batch: list[tuple[int, list[FileScan], dict]] = []
    for index, (folder, arrays) in enumerate(zip(folders, found, strict=True)):
        try:
            metadata = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            metadata = None
        plain = all(isinstance(scan, FileScan) and scan.descr is not None for scan in arrays)
        if plain and metadata is not None and len({scan.length for scan in arrays[1:]}) == 1:
            batch.append((index, arrays, metadata))
        else:
            reports[index] = _check_tokenized_folder_with_numpy(folder, vocab_size)
    for index, report in _check_plain_folders(folders, batch, vocab_size):
        reports[index] = report
    for folder, report in zip(folders, reports, strict=True):
        for problem in _identity_problems(folder, report):
            report.problem(problem)
    return reports


def _identity_problems(folder: Path, report: CheckReport) -> list[str]:
    """Whose data an hrm-data folder holds (``hrm_assets.tokenization.identity``): its
    ``metadata.json`` names the cleaned file of another folder, or records another token count
    (the row count is compared above)."""
    from hrm_assets.tokenization.identity import (
        identity_problems,
        is_hrm_tokenized,
        read_folder_metadata,
    )

    if not is_hrm_tokenized(folder) or "tokens" not in report.figures:
        return []
    metadata, _ = read_folder_metadata(folder)
    if metadata is None:
        return []  # reported as unreadable above
    return identity_problems(folder, metadata, {TOKENS_FILE: int(report.figures["tokens"])})


def _scanned_arrays(
    folders: list[Path], scans: Sequence[Mapping[str, FileScan]] | None
) -> list[list[FileScan | OSError]]:
    """Per folder, the scans of its tokens and span arrays: from ``scans`` where there, the
    others read in one call."""
    known = [dict(each) for each in scans] if scans is not None else [{} for _ in folders]
    missing = [
        (index, name)
        for index in range(len(folders))
        for name in _TOKENIZED_ARRAYS
        if name not in known[index]
    ]
    read = scan_files([folders[index] / name for index, name in missing])
    for (index, name), scan in zip(missing, read, strict=True):
        known[index][name] = scan
    return [[folder_scans[name] for name in _TOKENIZED_ARRAYS] for folder_scans in known]


def _check_plain_folders(
    folders: list[Path], batch: list[tuple[int, list[FileScan], dict]], vocab_size: int
) -> Iterator[tuple[int, CheckReport]]:
    """The reports of folders whose arrays are all plain (``batch``: index, scans of
    ``_TOKENIZED_ARRAYS``, metadata), their spans read in one call and checked row by row in
    one pass (:mod:`hrm_assets.sampling.span_table`)."""
    import numpy as np

    from hrm_assets import _core
    from hrm_assets.sampling.span_table import (
        bounds_of,
        row_flags,
        segment_sums,
        span_layout_problem,
    )

    if not batch:
        return
    read = _core.read_span_columns(
        [str(folders[index]) for index, _, _ in batch], list(SPAN_FIELDS)
    )
    if read is None:  # a file changed since it was scanned: numpy reads each one
        for index, _, _ in batch:
            yield index, _check_tokenized_folder_with_numpy(folders[index], vocab_size)
        return
    columns, rows = read
    spans = [np.frombuffer(column, dtype=np.int64) for column in columns]
    inst_start, inst_len, resp_start, resp_len = spans
    bounds = bounds_of(rows)
    token_counts = np.array([arrays[0].length for _, arrays, _ in batch], dtype=np.int64)
    flags = row_flags(*spans, bounds, token_counts)
    bad_rows = segment_sums(flags.bad, bounds)
    covered = segment_sums(inst_len, bounds) + segment_sums(resp_len, bounds)
    # An unsigned length is never below 0: as int64 a value past 2**63 only looks negative.
    signed = np.array([_dtype(arrays[2].descr).kind == "i" for _, arrays, _ in batch])
    short_rows = (inst_len < 2) & ((inst_len >= 0) | np.repeat(signed, np.diff(bounds)))
    shorts = segment_sums(short_rows, bounds)
    for task, (index, arrays, metadata) in enumerate(batch):
        tokens, token_count = arrays[0], int(token_counts[task])
        span_problem = None
        if bad_rows[task] or covered[task] != token_count:
            # Only a failing folder's spans are looked at again, to name its first bad row.
            rows_of = slice(bounds[task], bounds[task + 1])
            span_problem = span_layout_problem(*(column[rows_of] for column in spans), token_count)
        report = _tokenized_report(
            folders[index].name,
            vocab_size,
            dtypes=[_dtype(scan.descr) for scan in arrays],
            span_problem=span_problem,
            rows=int(rows[task]),
            metadata=metadata,
            tokens=token_count,
            max_id=tokens.max_value if tokens.max_value is not None else 0,
            short=int(shorts[task]),
        )
        yield index, report


def _check_tokenized_folder_with_numpy(folder: Path, vocab_size: int) -> CheckReport:
    """:func:`check_tokenized_folders` of one folder, its arrays loaded by numpy (whose errors
    name an array that cannot be read)."""
    import numpy as np

    try:
        tokens = _load(folder, "tokens")
        spans = {name: _load(folder, name) for name in SPAN_FIELDS}
        metadata = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        report = CheckReport()
        report.problem(f"{folder.name}: unreadable: {error}")
        return report
    return _tokenized_report(
        folder.name,
        vocab_size,
        dtypes=[tokens.dtype, *(spans[name].dtype for name in SPAN_FIELDS)],
        span_problem=_span_problem(spans, len(tokens), sampled=False),
        rows=len(spans["inst_start"]),
        metadata=metadata,
        tokens=len(tokens),
        max_id=int(tokens.max()) if len(tokens) else 0,
        short=int(np.count_nonzero(np.asarray(spans["inst_len"]) < 2)),
    )


def _tokenized_report(
    name: str,
    vocab_size: int,
    *,
    dtypes: list[np.dtype],
    span_problem: str | None,
    rows: int,
    metadata: object,
    tokens: int,
    max_id: int,
    short: int,
) -> CheckReport:
    """The report of tokenized folder ``name`` from its figures (``dtypes``: of tokens, then of
    the spans in ``SPAN_FIELDS`` order), however they were read: its messages, stated once."""
    report = CheckReport()
    expected = ("<u4", *("<u8" for _ in SPAN_FIELDS))
    for file, dtype, wanted in zip(_TOKENIZED_ARRAYS, dtypes, expected, strict=True):
        if dtype != _dtype(wanted):
            report.problem(f"{name}: {file} has dtype {dtype}, expected {wanted}")
    if span_problem is not None:
        report.problem(f"{name}: {span_problem}")
    if "rows" in metadata and metadata["rows"] != rows:
        report.problem(f"{name}: {rows} rows but metadata.json records {metadata['rows']}")
    if tokens and max_id >= vocab_size:
        report.problem(f"{name}: token id {max_id} >= vocab size {vocab_size}")
    if short:
        report.problem(f"{name}: {short} instructions shorter than [BOQ, EOQ]")
    report.figures.update(rows=rows, tokens=tokens, max_token_id=max_id)
    return report


@functools.cache
def _dtype(descr: str) -> np.dtype:
    import numpy as np

    return np.dtype(descr)


def check_sampled_folder(folder: Path, epochs: int | None = None) -> CheckReport:
    """The folder exists (``/dev/shm`` is wiped on reboot), the epoch count matches, every span
    lies inside ``tokens.npy`` and its dtype fits the vocabulary."""
    import numpy as np

    folder = Path(folder)
    report = CheckReport()
    if not folder.is_dir():
        report.problem(f"{folder}: sampled folder is missing (a RAM disk is wiped on reboot)")
        return report
    try:
        metadata = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
        tokens = np.load(folder / TOKENS_FILE, mmap_mode="r")
    except (OSError, ValueError) as error:
        report.problem(f"{folder}: unreadable: {error}")
        return report
    vocab_size = (metadata.get("tokenizer_info") or {}).get("vocab_size")
    if vocab_size is None:
        report.problem(f"{folder}: metadata.json has no tokenizer_info.vocab_size")
    elif vocab_size - 1 > np.iinfo(tokens.dtype).max:
        report.problem(f"{folder}: dtype {tokens.dtype} cannot hold vocab size {vocab_size}")
    found = sorted(
        int(p.name.split("_", 1)[1])
        for p in folder.glob("epoch_*")
        if p.is_dir() and p.name.split("_", 1)[1].isdigit()
    )
    if found != list(range(len(found))):
        report.problem(f"{folder}: epoch folders are not epoch_0..epoch_{len(found) - 1}: {found}")
    if epochs is not None and len(found) != epochs:
        report.problem(f"{folder}: {len(found)} epochs, expected {epochs}")
    rows = 0
    for epoch in found:
        epoch_dir = folder / f"epoch_{epoch}"
        try:
            spans = {
                name: np.load(epoch_dir / f"{name}.npy", mmap_mode="r") for name in SPAN_FIELDS
            }
        except (OSError, ValueError) as error:
            report.problem(f"{epoch_dir}: unreadable: {error}")
            continue
        problem = _span_problem(spans, len(tokens), sampled=True)
        if problem is not None:
            report.problem(f"{epoch_dir.name}: {problem}")
        rows += len(spans["inst_start"])
    report.figures.update(epochs=len(found), rows=rows, tokens=len(tokens), dtype=str(tokens.dtype))
    return report
