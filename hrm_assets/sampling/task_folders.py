"""Reading a tokenized root's task folders for the sampler: ``tokenizer_info.json``, the task
folders in sorted order, ``tokens.npy`` headers and every task's spans, checked against the
span rule of :mod:`hrm_assets.sampling.span_table`; errors are :class:`SamplingError` naming
the file."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hrm_assets import _core
from hrm_assets.common.atomic import TMP_PREFIX
from hrm_assets.common.npy_files import (
    NpyFileError,
    NpyLayout,
    load_integers_quickly,
    npy_layout_quickly,
)
from hrm_assets.common.settings import METADATA_FILE, TOKENIZER_INFO_FILE, TOKENS_FILE
from hrm_assets.contracts.spans import SPAN_FIELDS
from hrm_assets.sampling.config import SamplingError
from hrm_assets.sampling.span_table import (
    bounds_of,
    first_inconsistent_task,
    span_layout_problem,
)


@dataclass
class Spans:
    """Row spans of one task (int64), all of the same length."""

    inst_start: np.ndarray
    inst_len: np.ndarray
    resp_start: np.ndarray
    resp_len: np.ndarray

    def __len__(self) -> int:
        return len(self.inst_len)

    def select(self, mask: np.ndarray) -> Spans:
        return Spans(*(getattr(self, name)[mask] for name in SPAN_FIELDS))


def load_tokenizer_info(tokenized_path: Path) -> dict[str, Any]:
    """The tokenized root's ``tokenizer_info.json`` as a dict; errors name the file."""
    path = Path(tokenized_path) / TOKENIZER_INFO_FILE
    try:
        info = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise SamplingError(f"{path}: missing (not a tokenized folder?)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SamplingError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(info, dict):
        raise SamplingError(f"{path}: expected a JSON object, got {type(info).__name__}")
    vocab_size = info.get("vocab_size")
    if vocab_size is not None and (
        isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, float))
    ):
        raise SamplingError(f"{path}: vocab_size must be a number or null, got {vocab_size!r}")
    return info


def task_directories(tokenized_path: Path) -> list[Path]:
    """The task folders of a tokenized root in sorted name order (``.tmp-*`` leftovers skipped)."""
    root = Path(tokenized_path)
    if not root.is_dir():
        raise SamplingError(f"{root}: tokenized_path is not a directory")
    return [
        entry
        for entry in sorted(root.iterdir(), key=lambda p: p.name)
        if entry.is_dir() and not entry.name.startswith(TMP_PREFIX)
    ]


def _load_array(path: str | Path) -> np.ndarray:
    """A 1-D integer ``.npy`` (read-only); errors are :class:`SamplingError` naming the file."""
    try:
        return load_integers_quickly(str(path))
    except NpyFileError as exc:
        raise SamplingError(str(exc)) from None


def npy_layout(path: Path) -> NpyLayout:
    """(dtype, length, byte offset of the data) of a 1-D integer ``.npy``, from its header.

    Raises :class:`SamplingError` naming the file.
    """
    try:
        return npy_layout_quickly(path)
    except NpyFileError as exc:
        raise SamplingError(str(exc)) from None


def token_count(task_dir: Path) -> int:
    """Length of a task's ``tokens.npy``, read from its header only."""
    return npy_layout(Path(task_dir) / TOKENS_FILE)[1]


def _as_int64(array: np.ndarray) -> np.ndarray:
    """data_io's uint64 spans as int64 without a copy: values past 2**63 turn negative, which
    the checks refuse as out of range (so no valid value is changed)."""
    if array.dtype == np.dtype(np.uint64):
        return array.view(np.int64)
    return array.astype(np.int64)


def load_spans(task_dir: Path, count: int | None = None) -> tuple[Spans, int]:
    """Read and check one task's spans; returns them as int64 and the task's token count
    (``count`` when the caller has read it from the ``tokens.npy`` header already).

    Errors (:class:`SamplingError`) name the file: a missing or non-integer array, arrays of
    different lengths, negative values, a span past the end of ``tokens.npy``, rows that do
    not lie back to back (overlapping or leaving gaps, :func:`span_layout_problem`), or a
    ``tokens.npy`` whose length is not the sum of all instruction and response lengths.
    """
    task_dir = Path(task_dir)
    if count is None:
        count = token_count(task_dir)
    arrays = {}
    for name in SPAN_FIELDS:
        path = task_dir / f"{name}.npy"
        array = _load_array(path)
        if array.dtype.kind == "i" and len(array) and array.min() < 0:
            raise SamplingError(f"{path}: negative values")
        if len(array) and int(array.max()) > count:
            raise SamplingError(
                f"{path}: value {int(array.max())} exceeds the {count} tokens of tokens.npy"
            )
        arrays[name] = _as_int64(array)
    lengths = {name: len(array) for name, array in arrays.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name}.npy={n}" for name, n in lengths.items())
        raise SamplingError(f"{task_dir}: span arrays have different lengths ({described})")
    spans = Spans(**arrays)
    problem = span_layout_problem(
        spans.inst_start, spans.inst_len, spans.resp_start, spans.resp_len, count
    )
    if problem is not None:
        raise SamplingError(f"{task_dir}: {problem}")
    return spans, count


def read_span_table(
    task_dirs: list[Path], counts: list[int], on_tasks: Callable[[int], object] | None = None
) -> tuple[Spans, np.ndarray]:
    """Every task's spans back to back (int64) and the bounds of each task's rows (task ``t``
    owns rows ``bounds[t]:bounds[t + 1]``), checked as :func:`load_spans` checks them.

    The Rust core reads plain arrays (the headers of ``numpy.save`` and of data_io's
    ``ndarray-npy``), all tasks in one call (``rust_tokenizer/src/sample/spans.rs``); anything
    else is read here. Every task is then checked against the span rule of
    :mod:`hrm_assets.sampling.span_table` (the one the asset checks and ``hrm-verify`` apply).
    The first task that fails is read again by :func:`load_spans`, whose error names
    its file. ``on_tasks(n)`` is called as task folders are read.
    """
    reported = 0

    def report(tasks: int) -> None:
        nonlocal reported
        reported += tasks
        if on_tasks is not None:
            on_tasks(tasks)

    read = _core.read_span_columns(
        [str(task_dir) for task_dir in task_dirs], list(SPAN_FIELDS), report
    )
    if read is None:
        table, bounds = _read_span_table_by_task(task_dirs, counts, report, skip=reported)
    else:
        columns, rows = read
        table = Spans(
            **{
                name: np.frombuffer(column, dtype=np.int64)
                for name, column in zip(SPAN_FIELDS, columns, strict=True)
            }
        )
        bounds = bounds_of(rows)
    bad = first_inconsistent_task(
        table.inst_start,
        table.inst_len,
        table.resp_start,
        table.resp_len,
        bounds,
        np.asarray(counts, dtype=np.int64),
    )
    if bad is not None:
        load_spans(task_dirs[bad], counts[bad])  # raises the task's own message
        raise SamplingError(f"{task_dirs[bad]}: inconsistent span arrays")
    return table, bounds


def _read_span_table_by_task(
    task_dirs: list[Path], counts: list[int], report: Callable[[int], object], skip: int
) -> tuple[Spans, np.ndarray]:
    """:func:`read_span_table`'s reading for arrays of any header, a task at a time (``skip``:
    tasks already reported as read)."""
    parts: dict[str, list[np.ndarray]] = {name: [] for name in SPAN_FIELDS}
    rows = np.zeros(len(task_dirs), dtype=np.int64)
    for index, (task_dir, count) in enumerate(zip(task_dirs, counts, strict=True)):
        folder = str(task_dir)  # plain strings: pathlib would cost more than the reads
        arrays = [_load_array(os.path.join(folder, f"{name}.npy")) for name in SPAN_FIELDS]
        if len({len(array) for array in arrays}) > 1:
            load_spans(task_dir, count)  # raises, naming the arrays and their lengths
        for name, array in zip(SPAN_FIELDS, arrays, strict=True):
            parts[name].append(_as_int64(array))
        rows[index] = len(arrays[0])
        if index >= skip:
            report(1)
    table = Spans(
        **{
            name: np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)
            for name, arrays in parts.items()
        }
    )
    return table, bounds_of(rows)


# --------------------------------------------------------------------------- writing outputs


# --------------------------------------------------------------------------- sampling


def check_one_tokenizer(task_dirs: list[Path]) -> str | None:
    """Refuse task folders made with different tokenizers or framings (``metadata.json``'s
    ``tokenizer_sha256`` and ``framing``, recorded by hrm-data's tokenizer); returns the one
    ``tokenizer_sha256`` they record (``None`` when none does, as in data_io's folders)."""
    made_with: dict[tuple[str, str], list[str]] = {}
    for task_dir in task_dirs:
        try:
            metadata = json.loads((task_dir / METADATA_FILE).read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(metadata, dict) and "tokenizer_sha256" in metadata:
            key = (str(metadata["tokenizer_sha256"]), str(metadata.get("framing")))
            made_with.setdefault(key, []).append(task_dir.name)
    if len(made_with) > 1:
        groups = "; ".join(
            f"tokenizer {tokenizer[:12]} framing {framing[:12]}: {', '.join(names[:3])}"
            + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            for (tokenizer, framing), names in sorted(made_with.items())
        )
        raise SamplingError(
            f"task folders of {task_dirs[0].parent} were made with different tokenizers or "
            f"framings ({groups}); re-tokenize them with one tokenizer"
        )
    return next((tokenizer for tokenizer, _ in made_with), None)
