"""Stratified sampling of a tokenized root into the epochs HRM-Text trains on.

The output is byte-identical to data_io's ``sample_tokenized.py`` wherever data_io works
(docs/CONTRACTS.md section 3):

- ``tokens.npy``: every task's tokens back to back, in sorted task order, filtered rows
  included, in the smallest dtype the tokenizer's vocabulary allows.
- ``epoch_N/{inst_start,inst_len,resp_start,resp_len}.npy``: int64 spans into ``tokens.npy``.
- ``metadata.json``: HRM-Text's ``V1DatasetMeta`` as pydantic serialises it.

Where data_io crashes this module does not: the epoch buffer holds whatever the rules ask for
(``repeat`` on uncapped tasks), and empty tasks or tasks with no row left after filtering
sample nothing. Deliberate differences on inputs data_io accepts, none of which changes the
bytes of a valid sample:

- Sub-folders whose name starts with ``.tmp-`` (unfinished atomic writes of this project) are
  not tasks; data_io would read them.
- Inconsistent task folders (arrays of different lengths, spans outside ``tokens.npy``, rows
  not back to back as the tokenizer writes them, token count not equal to the span lengths)
  are errors; data_io copies garbage or crashes later.
- Task folders whose ``metadata.json`` records different tokenizers or framings (a re-tokenization
  with a new tokenizer that failed for some files) are an error: their token ids do not mean
  the same thing. Folders without these fields (data_io's) are not compared.
- The output folder is replaced atomically (data_io writes into it in place): no stale
  ``epoch_N`` survives a run with fewer epochs, and a failed run leaves the previous output
  untouched. The price is room for the old and the new output at once while the new one is
  built (on ``/dev/shm`` that is RAM). Only an empty folder or one whose manifest lists all
  it holds, at any depth, is replaced; anything else is named in an error
  (``hrm_assets.sampling.output_folder``), including a folder data_io wrote. A symlinked
  ``output_path`` is written through, the link kept.
- The output also holds ``manifest.json`` (size and SHA-256 of every file HRM-Text reads: the
  arrays, ``metadata.json`` and the tokenizer files, written before the rename;
  ``hrm_assets.common.manifest``), which HRM-Text does not read, and a
  ``tokenizer/`` folder that ``transformers.AutoTokenizer.from_pretrained`` loads, for HRM-Text's
  inference and export (``hrm_assets.sampling.tokenizer_folder``; left out, with a warning, when the
  tokenizer ``tokenizer_info.json`` names is not found or is not the one tokenization used).

Truncate mode can leave a row with fewer response tokens than ``min_resp_length`` (the length
rule is applied before truncation, as in data_io). Such rows are counted per task
(``rows_short_after_truncate``), reported in a warning and kept, as data_io keeps them;
``drop_short_after_truncate`` (off by default, so the bytes stay data_io's) excludes them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from hrm_assets import _core
from hrm_assets.common.atomic import (
    TMP_PREFIX,
    atomic_directory,
    exclusive_lock,
    fsync_file,
    lock_path_for,
    remove_leftovers,
)
from hrm_assets.common.config_errors import dotted_key, field_problems
from hrm_assets.common.manifest import (
    KIND_FIELD,
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    SAMPLED_KIND,
    kind_problem,
    manifest_bytes,
)
from hrm_assets.common.npy_files import (
    NpyFileError,
    NpyLayout,
    load_integers_quickly,
    npy_layout_quickly,
)
from hrm_assets.common.progress import progress_bar
from hrm_assets.common.settings import METADATA_FILE, TOKENIZER_INFO_FILE, TOKENS_FILE
from hrm_assets.sampling import defaults
from hrm_assets.sampling.arrays import (
    ManifestEntry,
    TokenCopyError,
    TokenSource,
    concatenate_tokens,
)
from hrm_assets.sampling.epoch_budget import (
    EpochBudgetError,
    TaskDemand,
    check_epoch_budget,
    free_space,
)
from hrm_assets.sampling.epoch_draw import draw_epochs
from hrm_assets.sampling.mixture.allocation import (
    MixtureAllocationError,
    MixturePlan,
    TaskSupply,
    allocate_mixture,
)
from hrm_assets.sampling.mixture.config import (
    MixtureConfig,
    MixtureConfigError,
    check_phases_fit,
    effective_phases,
    load_mixture,
)
from hrm_assets.sampling.mixture.draw import draw_mixture_epochs
from hrm_assets.sampling.mixture.groups import task_groups
from hrm_assets.sampling.mixture.report import MixtureReport, mixture_report
from hrm_assets.sampling.output_folder import output_target, unproven_paths
from hrm_assets.sampling.prefix_config import (
    PrefixConfigError,
    PrefixRule,
    SamplingRule,
    load_prefix_rules,
    rule_for,
)
from hrm_assets.sampling.span_table import (
    bounds_of,
    filter_lengths,
    first_inconsistent_task,
    segment_sums,
    span_layout_problem,
)
from hrm_assets.sampling.tokenizer_folder import (
    TOKENIZER_DIR,
    TokenizerChoice,
    TokenizerFolderError,
    choose_tokenizer,
    write_tokenizer_folder,
)
from hrm_assets.tokenization.identity import refusal, tokenized_input_problems
from hrm_assets.tokenization.snapshot import SnapshotError, TokenizedSnapshot, tokenized_snapshot

SPAN_FIELDS = ("inst_start", "inst_len", "resp_start", "resp_len")
GLOBAL_CATEGORY = "GLOBAL"

Warn = Callable[[str], None]


class SamplingError(ValueError):
    """Bad sampling input or configuration; the message names the path and the problem."""


class SamplingConfig(BaseModel):
    """What to sample: the keys of data_io's ``sample_tokenized.py`` with its defaults.

    ``output_path`` belongs to the sampler: it is replaced as a whole on success.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokenized_path: Path
    output_path: Path
    prefix_config_path: Path
    # The tokenizer shipped in output_path/tokenizer/ (hrm_assets.sampling.tokenizer_folder); None:
    # the one tokenizer_info.json records, if it is found.
    tokenizer_path: Path | None = None
    # Defaults, bounds and help: hrm_assets.sampling.defaults.
    seed: int = defaults.SEED.field(strict=True)
    epochs: int = defaults.EPOCHS.field(strict=True)
    context_size: int = defaults.CONTEXT_SIZE.field(strict=True)
    min_resp_length: int = defaults.MIN_RESP_LENGTH.field(strict=True)
    drop_short_after_truncate: bool = defaults.DROP_SHORT_AFTER_TRUNCATE.field(strict=True)

    @field_validator(
        "tokenized_path", "output_path", "prefix_config_path", "tokenizer_path", mode="before"
    )
    @classmethod
    def _non_empty_path(cls, value: Any) -> Any:
        # Path("") is the current directory: almost always a missing value, never intended.
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty")
        return value


def config_error_message(exc: ValidationError) -> str:
    """One line per invalid field, e.g. ``epochs: Input should be greater than or equal to 1``."""
    return field_problems(exc, lambda location: dotted_key(location) or "config", show_value=False)


def make_config(**values: Any) -> SamplingConfig:
    """Build a :class:`SamplingConfig`, turning validation errors into :class:`SamplingError`."""
    try:
        return SamplingConfig(**values)
    except ValidationError as exc:
        raise SamplingError(config_error_message(exc)) from None


class SampledMetadata(BaseModel):
    """HRM-Text's ``V1DatasetMeta``; field order and defaults fix the bytes of metadata.json."""

    tokenizer_info: dict[str, Any] = {}
    vocab_size: int | None = None
    max_seq_len: int
    total_length: int


def token_dtype(vocab_size: float | None) -> np.dtype:
    """data_io's rule: ``<= 255`` uint8, ``<= 65535`` uint16, otherwise (or unknown) int32."""
    if vocab_size is not None:
        if vocab_size <= np.iinfo(np.uint8).max:
            return np.dtype(np.uint8)
        if vocab_size <= np.iinfo(np.uint16).max:
            return np.dtype(np.uint16)
    return np.dtype(np.int32)


def rows_per_epoch(rule: SamplingRule, rows: int) -> int:
    """Rows a task contributes to each epoch: ``min(max_per_file, rows) * repeat``."""
    wanted = rows if rule.max_per_file is None else min(rule.max_per_file, rows)
    return wanted * rule.repeat


def task_category(name: str) -> str:
    """The report's category: the task name up to the first ``__``."""
    return name.split("__")[0]


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


@dataclass(frozen=True)
class FilterCounts:
    kept: int
    dropped_short: int
    dropped_long: int
    truncated: int
    # Rows truncation left below min_resp_length (kept unless drop_short_after_truncate).
    short_after_truncate: int = 0
    # Of those, the rows excluded because drop_short_after_truncate was set.
    dropped_short_after_truncate: int = 0


def filter_rows(
    spans: Spans,
    rule: SamplingRule,
    context_size: int,
    min_resp_length: int,
    drop_short_after_truncate: bool = False,
) -> tuple[Spans, FilterCounts]:
    """Apply the length rules (:func:`hrm_assets.sampling.span_table.filter_lengths`) to one task;
    returns the kept rows (responses truncated) and the counts."""
    filtered = filter_lengths(
        spans.inst_len,
        spans.resp_len,
        rule.long_context == "truncate",
        context_size,
        min_resp_length,
        drop_short_after_truncate,
    )
    counts = FilterCounts(
        kept=int(np.count_nonzero(filtered.keep)),
        dropped_short=int(np.count_nonzero(filtered.dropped_short)),
        dropped_long=int(np.count_nonzero(filtered.dropped_long)),
        truncated=int(np.count_nonzero(filtered.truncated)),
        short_after_truncate=int(np.count_nonzero(filtered.short_after_truncate)),
        dropped_short_after_truncate=int(np.count_nonzero(filtered.dropped_short_after_truncate)),
    )
    kept = Spans(spans.inst_start, spans.inst_len, spans.resp_start, filtered.resp_len)
    return kept.select(filtered.keep), counts


@dataclass
class CoverageStats:
    """data_io's report figures for a task or a category, plus what filtering removed.

    ``rows``/``tokens`` count the rows kept after filtering (responses truncated). The
    ``covered_*`` figures count every draw over all epochs (a row drawn twice counts twice);
    ``unique_*`` count the rows drawn at least once.
    """

    rows: int = 0
    tokens: int = 0
    inst_tokens: int = 0
    resp_tokens: int = 0
    covered_rows: int = 0
    covered_tokens: int = 0
    covered_inst_tokens: int = 0
    covered_resp_tokens: int = 0
    unique_rows: int = 0
    unique_tokens: int = 0
    source_rows: int = 0
    rows_dropped_short: int = 0
    rows_dropped_long: int = 0
    rows_truncated: int = 0
    rows_short_after_truncate: int = 0
    rows_dropped_short_after_truncate: int = 0

    @property
    def rows_dropped(self) -> int:
        return (
            self.rows_dropped_short
            + self.rows_dropped_long
            + self.rows_dropped_short_after_truncate
        )

    @classmethod
    def total(cls, parts: Iterable[CoverageStats]) -> CoverageStats:
        """Every figure summed over ``parts``."""
        sums = dict.fromkeys(_COVERAGE_FIELDS, 0)
        for part in parts:
            values = vars(part)
            for name in _COVERAGE_FIELDS:
                sums[name] += values[name]
        return cls(**sums)


_COVERAGE_FIELDS = tuple(item.name for item in fields(CoverageStats))


@dataclass(frozen=True)
class TaskReport:
    """One task: its rule, where its tokens sit in ``tokens.npy`` and its statistics."""

    name: str
    category: str
    rule: SamplingRule
    matched_prefix: str | None
    token_offset: int
    token_count: int
    rows_per_epoch: int
    stats: CoverageStats


@dataclass(frozen=True)
class SamplingResult:
    """What a sampling run wrote and the figures of data_io's analytics report."""

    config: SamplingConfig
    output_path: Path
    token_dtype: str
    total_tokens: int
    tasks: list[TaskReport]
    categories: dict[str, CoverageStats]
    global_stats: CoverageStats
    epoch_rows: list[int]
    epoch_tokens: list[int]
    metadata: dict[str, Any]
    # The folder AutoTokenizer.from_pretrained loads (None: no tokenizer was found to ship).
    tokenizer_dir: Path | None = None
    warnings: list[str] = field(default_factory=list)
    # Target against achieved shares when prefix_config.yaml has a mixture
    # (hrm_assets.sampling.mixture).
    mixture: MixtureReport | None = None

    @property
    def total_length(self) -> int:
        return int(self.metadata["total_length"])


# --------------------------------------------------------------------------- reading inputs


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


def check_source_registry() -> None:
    """Load the sources registry (built-in and ``sources.yaml``'s) the data card names each
    task's source from, before anything is read: a bad ``sources.yaml`` is one
    :class:`SamplingError` naming the file, entry and key (it is loaded when first imported,
    which is why the sampler imports the data card's writer only when it writes one)."""
    try:
        import hrm_assets.cleaning.sources  # noqa: F401
    except ValueError as exc:  # DeclaredSourceError, raised while the package loads
        raise SamplingError(str(exc)) from None


def _check_output_path(config: SamplingConfig) -> Path:
    """The folder to write (``output_path`` through any symlink,
    :func:`hrm_assets.sampling.output_folder.output_target`), refused when it nests with the inputs,
    is not a folder, or holds anything the sampler cannot prove it wrote."""
    output = output_target(config.output_path)
    tokenized = output_target(config.tokenized_path)
    if output == tokenized or tokenized in output.parents or output in tokenized.parents:
        raise SamplingError(
            f"output_path {output} and tokenized_path {tokenized} must not contain each other"
        )
    if output.exists() and not output.is_dir():
        raise SamplingError(f"{output}: output_path exists and is not a directory")
    _refuse_unproven(output)
    return output


def _refuse_unproven(output: Path) -> None:
    """Refuse to replace ``output`` while it holds paths that are not a sampled output's."""
    if not output.is_dir():
        return
    other_kind = kind_problem(output, SAMPLED_KIND, "hrm-sample")
    if other_kind is not None:
        raise SamplingError(f"output_path {other_kind}")
    foreign = unproven_paths(output)
    if foreign:
        shown = ", ".join(str(path) for path in foreign[:5]) + (
            f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        )
        raise SamplingError(
            f"{output}: output_path holds what is not a sampled output (not listed in its "
            f"{MANIFEST_FILE}): {shown}; the output is replaced as a whole, so move them away "
            f"or choose an empty or sampled folder"
        )


def _exclusive_output(output: Path) -> contextlib.ExitStack:
    """Hold the lock of ``output`` (released when the returned stack exits); a concurrent run
    is refused at once rather than queued."""
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(exclusive_lock(lock_path_for(output), wait=False))
    except BlockingIOError:
        raise SamplingError(f"{output}: another sampling run is writing this output_path") from None
    return stack


def _ambiguity_warnings(names: list[str], rules: list[PrefixRule]) -> list[str]:
    """data_io warns when a task matches several prefixes; grouped here, one line per group."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name in names:
        matching = tuple(rule.prefix for rule in rules if name.startswith(rule.prefix))
        if len(matching) > 1:
            groups.setdefault(matching, []).append(name)
    messages = []
    for matching, tasks in groups.items():
        shown = ", ".join(tasks[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
        messages.append(
            f"{len(tasks)} task(s) match several prefixes {list(matching)}; the first rule "
            f"({matching[0]!r}) applies: {shown}"
        )
    return messages


def _unmatched_rule_warnings(
    names: list[str], rules: list[PrefixRule], config: SamplingConfig
) -> list[str]:
    """One line naming the rules whose prefix no task folder starts with: a typo there leaves
    the tasks it meant under the defaults, silently in data_io. A warning, not an error: one
    rules file (the project's) serves tokenized roots that hold only some of its sources."""
    unmatched = [
        f"rule {index} (prefix {rule.prefix!r})"
        for index, rule in enumerate(rules)
        if not any(name.startswith(rule.prefix) for name in names)
    ]
    if not unmatched:
        return []
    return [
        f"{config.prefix_config_path}: {', '.join(unmatched)} "
        f"{'matches' if len(unmatched) == 1 else 'match'} no task folder of "
        f"{config.tokenized_path} (a typo?): applied to nothing"
    ]


def _task_reports(
    names: list[str],
    table: Spans,
    bounds: np.ndarray,
    counts: list[int],
    rules: list[PrefixRule],
    config: SamplingConfig,
) -> tuple[list[TaskReport], Spans, np.ndarray]:
    """Apply each task's rule to the span table; returns the reports, the kept rows (offset
    into tokens.npy, responses truncated) and the bounds of each task's kept rows.

    Offsets follow the unfiltered token counts, since tokens.npy keeps filtered rows too.
    """
    task_rules = [rule_for(name, rules) for name in names]
    task_rows = np.diff(bounds)
    filtered = filter_lengths(
        table.inst_len,
        table.resp_len,
        np.repeat([rule.long_context == "truncate" for rule in task_rules], task_rows),
        config.context_size,
        config.min_resp_length,
        config.drop_short_after_truncate,
    )
    offsets = bounds_of(counts)
    row_offsets = np.repeat(offsets[:-1], task_rows)
    keep = filtered.keep
    kept = Spans(
        inst_start=(table.inst_start + row_offsets)[keep],
        inst_len=table.inst_len[keep],
        resp_start=(table.resp_start + row_offsets)[keep],
        resp_len=filtered.resp_len[keep],
    )
    kept_rows = segment_sums(keep, bounds)
    kept_bounds = bounds_of(kept_rows)
    per_task = {
        "rows": kept_rows,
        "inst_tokens": segment_sums(kept.inst_len, kept_bounds),
        "resp_tokens": segment_sums(kept.resp_len, kept_bounds),
        "dropped_short": segment_sums(filtered.dropped_short, bounds),
        "dropped_long": segment_sums(filtered.dropped_long, bounds),
        "truncated": segment_sums(filtered.truncated, bounds),
        "short_after": segment_sums(filtered.short_after_truncate, bounds),
        "dropped_short_after": segment_sums(filtered.dropped_short_after_truncate, bounds),
    }
    figures = {key: values.tolist() for key, values in per_task.items()}
    reports = []
    for index, (name, rule) in enumerate(zip(names, task_rules, strict=True)):
        inst_tokens, resp_tokens = figures["inst_tokens"][index], figures["resp_tokens"][index]
        stats = CoverageStats(
            rows=figures["rows"][index],
            tokens=inst_tokens + resp_tokens,
            inst_tokens=inst_tokens,
            resp_tokens=resp_tokens,
            source_rows=int(task_rows[index]),
            rows_dropped_short=figures["dropped_short"][index],
            rows_dropped_long=figures["dropped_long"][index],
            rows_truncated=figures["truncated"][index],
            rows_short_after_truncate=figures["short_after"][index],
            rows_dropped_short_after_truncate=figures["dropped_short_after"][index],
        )
        reports.append(
            TaskReport(
                name=name,
                category=task_category(name),
                rule=rule,
                matched_prefix=rule.prefix if isinstance(rule, PrefixRule) else None,
                token_offset=int(offsets[index]),
                token_count=counts[index],
                rows_per_epoch=rows_per_epoch(rule, figures["rows"][index]),
                stats=stats,
            )
        )
    return reports, kept, kept_bounds


def _check_budget(
    reports: list[TaskReport],
    rules: list[PrefixRule],
    config: SamplingConfig,
    output: Path,
    token_bytes: int,
    free_bytes: int,
) -> None:
    """Refuse epochs that cannot fit (:mod:`hrm_assets.sampling.epoch_budget`) before drawing
    them, in ``free_bytes`` (measured before the copy of ``tokens.npy`` began, which the
    budget counts: measured during the copy, the same disk would be refused or accepted by
    how far the copy had got)."""
    try:
        check_epoch_budget(
            [TaskDemand(report.name, report.rule, report.rows_per_epoch) for report in reports],
            rules,
            epochs=config.epochs,
            token_bytes=token_bytes,
            output_path=output,
            rules_path=config.prefix_config_path,
            free_bytes=free_bytes,
        )
    except EpochBudgetError as exc:
        raise SamplingError(str(exc)) from None


def empty_epochs_message(reports: list[TaskReport], config: SamplingConfig) -> str:
    """Why every epoch would be empty, naming the setting that emptied them: an empty output
    is never written over a good one (data_io writes it, and exits 0)."""
    stats = CoverageStats.total(report.stats for report in reports)
    causes = []
    if stats.rows_dropped_long:
        causes.append(
            f"{stats.rows_dropped_long:,} longer than context_size={config.context_size} "
            f"(long_context: drop)"
        )
    if stats.rows_dropped_short + stats.rows_dropped_short_after_truncate:
        causes.append(
            f"{stats.rows_dropped_short + stats.rows_dropped_short_after_truncate:,} with "
            f"fewer than min_resp_length={config.min_resp_length} response tokens"
        )
    excluded = [
        report.name for report in reports if report.stats.rows and not report.rows_per_epoch
    ]
    if excluded:
        causes.append(f"tasks given no rows by {config.prefix_config_path} ({excluded[0]}, ...)")
    why = "; ".join(causes) if causes else "the tokenized folders hold no rows"
    return (
        f"every epoch would be empty: of {stats.source_rows:,} rows none is left to sample "
        f"({why}); nothing was written, any previous output is kept"
    )


def _short_after_truncate_warning(reports: list[TaskReport], config: SamplingConfig) -> str | None:
    """The warning for rows that truncation left shorter than ``min_resp_length`` and that are
    kept (``None`` if there are none).

    HRM-Text's loader gives a row of response length ``n`` a causal segment of ``n - 1``
    tokens; an empty one is what its own data preparation drops (``scripts/prepare_sft_data.py``
    skips empty responses), since a packed batch of only such segments crashes the backward
    pass of its FlashAttention 3 prefix-LM kernel.
    """
    if config.drop_short_after_truncate:
        return None
    tasks = [report for report in reports if report.stats.rows_short_after_truncate]
    if not tasks:
        return None
    rows = sum(report.stats.rows_short_after_truncate for report in tasks)
    shown = ", ".join(
        f"{report.name} ({report.stats.rows_short_after_truncate})" for report in tasks[:3]
    ) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
    return (
        f"{rows} row(s) were truncated to a response shorter than min_resp_length="
        f"{config.min_resp_length} and are kept, as data_io keeps them: {shown}. A one-token "
        f"response leaves HRM-Text's loader an empty segment, which its own data preparation "
        f"drops because a batch of only such segments crashes its attention backward pass; "
        f"drop_short_after_truncate=true excludes these rows"
    )


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


def _write_epochs(
    staged: Path,
    reports: list[TaskReport],
    kept: Spans,
    kept_bounds: np.ndarray,
    config: SamplingConfig,
    progress: bool,
    plan: MixturePlan | None = None,
) -> tuple[list[int], np.int64, np.ndarray, dict[str, ManifestEntry], list[np.ndarray]]:
    """Draw and write every epoch (:mod:`hrm_assets.sampling.epoch_draw`; with a mixture ``plan``,
    :mod:`hrm_assets.sampling.mixture.draw`); returns tokens per epoch, their int64 total, the draw
    count of every kept row, the manifest entry of each array written (by its path relative
    to ``staged``) and each mixture phase's draw counts (none without a plan)."""
    if plan is not None:
        with progress_bar(progress, total=config.epochs, desc="Generating epoch indices") as bar:
            phased = draw_mixture_epochs(
                staged,
                {name: getattr(kept, name) for name in SPAN_FIELDS},
                kept.inst_len + kept.resp_len,
                np.diff(kept_bounds).tolist(),
                plan,
                config.seed,
                progress=(lambda: bar.update(1)) if progress else None,
            )
        total = np.array(phased.tokens, dtype=np.int64).sum(dtype=np.int64)
        return phased.tokens, total, phased.hits, phased.entries, phased.phase_hits
    tasks = [
        (rows, report.rows_per_epoch)
        for rows, report in zip(np.diff(kept_bounds).tolist(), reports, strict=True)
    ]
    with progress_bar(progress, total=config.epochs, desc="Generating epoch indices") as bar:
        draws = draw_epochs(
            staged,
            {name: getattr(kept, name) for name in SPAN_FIELDS},
            kept.inst_len + kept.resp_len,
            tasks,
            config.epochs,
            config.seed,
            progress=(lambda: bar.update(1)) if progress else None,
        )
    total = np.array(draws.tokens, dtype=np.int64).sum(dtype=np.int64)
    return draws.tokens, total, draws.hits, draws.entries, []


def sample_tokenized(
    config: SamplingConfig,
    *,
    progress: bool = False,
    warn: Warn | None = None,
    copy_workers: int = 2,
    log: Warn | None = None,
) -> SamplingResult:
    """Sample ``config.tokenized_path`` into ``config.output_path`` (docs/CONTRACTS.md section 3).

    Configuration and headers are checked before anything is written; the spans are checked
    while the tokens are already being copied. The whole output is built in a ``.tmp-``
    sibling (with its ``manifest.json``) and renamed into place, replacing the previous output
    only on success (a bad input removes the sibling); a lock file ``.<name>.lock`` beside it
    keeps concurrent runs apart, and its holder removes staged copies that killed runs left.
    The tokenized root is read as one snapshot (:mod:`hrm_assets.tokenization.snapshot`): shared
    locks keep tokenizers from rewriting its folders until the last read, and the run waits
    for a tokenizer writing one. ``progress`` shows tqdm bars on stderr; ``warn`` receives each
    warning as it happens (they are also in ``SamplingResult.warnings``); ``log`` other news
    (a wait for a tokenizer). Raises :class:`SamplingError` on bad configuration or inputs (or
    a concurrent run, or a tokenized root that would not hold still), ``OSError`` on I/O
    failure.
    """
    warnings: list[str] = []

    def note(message: str) -> None:
        warnings.append(message)
        if warn is not None:
            warn(message)

    if not config.tokenized_path.is_dir():
        raise SamplingError(f"{config.tokenized_path}: tokenized_path is not a directory")
    check_source_registry()
    try:
        rules = load_prefix_rules(config.prefix_config_path)
        mixture = load_mixture(config.prefix_config_path, rules)
        if mixture is not None:
            check_phases_fit(config.prefix_config_path, mixture, config.epochs)
    except (PrefixConfigError, MixtureConfigError) as exc:
        raise SamplingError(str(exc)) from None
    output = _check_output_path(config)
    try:
        with _held_still(config.tokenized_path, log) as snapshot:
            return _sample_snapshot(
                config, rules, output, snapshot, note, warnings, progress, copy_workers, mixture
            )
    except OSError as exc:
        # A write or fsync names no file: a full disk said only "[Errno 28] No space left on
        # device". The output it was building is named instead (its staged copy is gone).
        if exc.filename is None and exc.errno is not None:
            raise type(exc)(exc.errno, exc.strerror, os.fspath(output)) from None
        raise


@contextlib.contextmanager
def _held_still(tokenized_path: Path, log: Warn | None) -> Iterator[TokenizedSnapshot]:
    """:func:`hrm_assets.tokenization.snapshot.tokenized_snapshot` of the tokenized root, its
    errors as :class:`SamplingError`; ``log`` hears of each wait for a tokenizer."""

    def waiting(path: Path) -> None:
        if log is not None:
            log(f"waiting for {path}: a tokenizer is writing it")

    try:
        with tokenized_snapshot(tokenized_path, task_directories, on_wait=waiting) as snapshot:
            yield snapshot
    except SnapshotError as exc:
        raise SamplingError(str(exc)) from None


def _sample_snapshot(
    config: SamplingConfig,
    rules: list[PrefixRule],
    output: Path,
    snapshot: TokenizedSnapshot,
    note: Warn,
    warnings: list[str],
    progress: bool,
    copy_workers: int,
    mixture: MixtureConfig | None = None,
) -> SamplingResult:
    """:func:`sample_tokenized` once the tokenized root is held still (``snapshot``, released
    after the last read of it)."""
    tokenizer_info = load_tokenizer_info(config.tokenized_path)
    task_dirs = snapshot.task_dirs
    if not task_dirs:
        raise SamplingError(f"{config.tokenized_path}: no task folders to sample from")
    tokenizer_sha256 = check_one_tokenizer(task_dirs)
    # Every input is proven before it is trusted: its manifest recomputed, and an hrm-data
    # folder's metadata.json naming its own cleaned file with its arrays' counts.
    problems = tokenized_input_problems(task_dirs)
    if problems:
        raise SamplingError(
            refusal(problems, "nothing was sampled: tokenize again (hrm-verify lists them all)")
        )
    try:
        tokenizer = choose_tokenizer(
            config.tokenizer_path, tokenizer_info, config.tokenized_path, tokenizer_sha256
        )
    except TokenizerFolderError as exc:
        raise SamplingError(str(exc)) from None
    if tokenizer.problem is not None:
        note(
            f"no {TOKENIZER_DIR}/ folder in the output: {tokenizer.problem}; HRM-Text's "
            f"inference and Hugging Face export need one (name it with tokenizer_path=...)"
        )
    names = [task_dir.name for task_dir in task_dirs]
    for message in _ambiguity_warnings(names, rules):
        note(message)
    for message in _unmatched_rule_warnings(names, rules, config):
        note(message)
    vocab_size = tokenizer_info.get("vocab_size")
    if vocab_size is None:
        note(
            f"{config.tokenized_path / TOKENIZER_INFO_FILE}: no vocab_size; tokens are stored "
            f"as int32 and HRM-Text, which reads tokenizer_info.vocab_size, cannot load them"
        )
    dtype = token_dtype(vocab_size)

    # Every tokens.npy header is checked before the copy starts.
    sources = [
        TokenSource(task_dir / TOKENS_FILE, *npy_layout(task_dir / TOKENS_FILE))
        for task_dir in task_dirs
    ]
    with _exclusive_output(output):
        # Staged or retired copies of this output can only be left by killed runs: every run
        # holds this lock while it has them.
        remove_leftovers(output)
        free_bytes = free_space(output.parent)
        with atomic_directory(output) as staged, ThreadPoolExecutor(max_workers=1) as background:
            # The tokens are copied and hashed (by the Rust core, without the GIL) while the
            # spans are read and checked and the epochs drawn, which need only the spans. A bad
            # span file stops the copy, and the staged folder is removed.
            stop = threading.Event()
            copying = background.submit(
                concatenate_tokens,
                staged / TOKENS_FILE,
                sources,
                dtype,
                workers=copy_workers,
                progress=progress,
                stop=stop,
            )
            try:
                counts = [source.count for source in sources]
                # A context manager, so the bar ends its line even when a folder is rejected.
                with progress_bar(progress, total=len(task_dirs), desc="Reading indices") as bar:
                    table, bounds = read_span_table(task_dirs, counts, bar.update)
                reports, kept, kept_bounds = _task_reports(
                    names, table, bounds, counts, rules, config
                )
                del table
                plan = None
                if mixture is not None:
                    plan, reports, demands = _plan_mixture(mixture, reports, rules, config)
                    for message in plan.warnings:
                        note(message)
                _check_budget(
                    reports if plan is None else demands,
                    rules,
                    config,
                    output,
                    sum(counts) * dtype.itemsize,
                    free_bytes,
                )
                short = _short_after_truncate_warning(reports, config)
                if short is not None:
                    note(short)
                if sum(report.rows_per_epoch for report in reports) == 0:
                    raise SamplingError(empty_epochs_message(reports, config))
                epoch_tokens, total, hits, entries, phase_hits = _write_epochs(
                    staged, reports, kept, kept_bounds, config, progress, plan
                )
                _fill_coverage(reports, kept, kept_bounds, hits)
            except BaseException:
                stop.set()
                raise
            try:
                max_id, entries[TOKENS_FILE] = copying.result()
            except TokenCopyError as exc:
                raise SamplingError(str(exc)) from None
            # The tokenized root has been read: tokenizers may go on (and a folder no lock
            # held must not have changed meanwhile).
            snapshot.release()
            if max_id > np.iinfo(dtype).max:
                # data_io stores such ids wrapped around (70535 becomes 4999 in uint16): a
                # different token, silently. Never written; the staged folder goes.
                raise SamplingError(
                    f"{config.tokenized_path / TOKENIZER_INFO_FILE}: vocab_size {vocab_size} "
                    f"stores tokens as {dtype.name} (ids up to {np.iinfo(dtype).max:,}), but the "
                    f"tokenized folders hold token id {max_id:,}; ids are never wrapped: fix "
                    f"vocab_size or tokenize again with this tokenizer. Nothing written"
                )
            if vocab_size is not None and max_id >= vocab_size:
                note(f"token id {max_id} is outside the vocabulary (vocab_size {vocab_size})")
            # data_io divides an int64 by the epoch count and rounds half to even; so do we.
            metadata = SampledMetadata(
                tokenizer_info=tokenizer_info,
                max_seq_len=config.context_size,
                total_length=int(round(total / config.epochs)),
            )
            metadata_bytes = metadata.model_dump_json().encode("utf-8")
            (staged / METADATA_FILE).write_bytes(metadata_bytes)
            fsync_file(staged / METADATA_FILE)
            # HRM-Text reads it (the token dtype comes from its vocab_size): listed too.
            entries[METADATA_FILE] = {
                "sha256": hashlib.sha256(metadata_bytes).hexdigest(),
                "size": len(metadata_bytes),
            }
            if tokenizer.tokenizer_json is not None:
                entries.update(
                    write_tokenizer_folder(
                        staged / TOKENIZER_DIR,
                        tokenizer.tokenizer_json,
                        tokenizer_info,
                        max_seq_len=config.context_size - 1,  # HRM-Text's, after the shift
                    )
                )
            manifest = {
                "files": dict(sorted(entries.items())),
                "format": MANIFEST_FORMAT,
                KIND_FIELD: SAMPLED_KIND,
            }
            (staged / MANIFEST_FILE).write_bytes(manifest_bytes(manifest))
            fsync_file(staged / MANIFEST_FILE)
            result = _sampling_result(
                config, output, dtype, counts, reports, epoch_tokens, metadata, tokenizer, warnings
            )
            if plan is not None:
                result = replace(
                    result,
                    epoch_rows=plan.epoch_rows(),
                    mixture=mixture_report(
                        plan, phase_hits, kept.inst_len + kept.resp_len, kept_bounds
                    ),
                )
            # DATACARD.md and datacard.json (hrm_assets.sampling.datacard): the run's figures and
            # the manifest's hashes, in place with the epochs they describe.
            from hrm_assets.sampling.datacard import DataCardError, write_sampled_data_card

            try:
                write_sampled_data_card(
                    staged,
                    result,
                    manifest=manifest,
                    rules=rules,
                    tokenizer_sha256=tokenizer_sha256,
                )
            except DataCardError as exc:
                raise SamplingError(str(exc)) from None
            # Checked again as late as possible: anything put into the old output while this
            # run worked is refused too, not replaced.
            _refuse_unproven(output)
    return result


def _sampling_result(
    config: SamplingConfig,
    output: Path,
    dtype: np.dtype,
    counts: list[int],
    reports: list[TaskReport],
    epoch_tokens: list[int],
    metadata: SampledMetadata,
    tokenizer: TokenizerChoice,
    warnings: list[str],
) -> SamplingResult:
    """The :class:`SamplingResult` of a run whose files are written."""
    by_category: dict[str, list[CoverageStats]] = {}
    for report in reports:
        by_category.setdefault(report.category, []).append(report.stats)
    categories = {name: CoverageStats.total(parts) for name, parts in by_category.items()}
    return SamplingResult(
        config=config,
        output_path=output,
        token_dtype=dtype.name,
        total_tokens=int(sum(counts)),
        tasks=reports,
        categories=dict(sorted(categories.items())),
        global_stats=CoverageStats.total(report.stats for report in reports),
        epoch_rows=[sum(report.rows_per_epoch for report in reports)] * config.epochs,
        epoch_tokens=epoch_tokens,
        metadata=json.loads(metadata.model_dump_json()),
        tokenizer_dir=output / TOKENIZER_DIR if tokenizer.tokenizer_json is not None else None,
        warnings=warnings,
    )


def _plan_mixture(
    mixture: MixtureConfig,
    reports: list[TaskReport],
    rules: list[PrefixRule],
    config: SamplingConfig,
) -> tuple[MixturePlan, list[TaskReport], list[TaskReport]]:
    """The mixture's rows per task per epoch (:mod:`hrm_assets.sampling.mixture.allocation`);
    returns the plan, the reports with the first epoch's rows per epoch and, for the budget check,
    each task at its largest rows per epoch over the phases."""
    try:
        groups = task_groups(
            [report.name for report in reports], rules, mixture, config.prefix_config_path
        )
        plan = allocate_mixture(
            effective_phases(mixture),
            [
                TaskSupply(
                    name=report.name,
                    group=group,
                    capacity=report.rows_per_epoch,
                    rows=report.stats.rows,
                    tokens=report.stats.tokens,
                )
                for report, group in zip(reports, groups, strict=True)
            ],
            config.epochs,
            mixture.group_by,
        )
    except MixtureConfigError as exc:
        raise SamplingError(str(exc)) from None
    except MixtureAllocationError as exc:
        raise SamplingError(f"{config.prefix_config_path}: mixture: {exc}") from None
    first = plan.phases[0].task_rows
    largest = [max(rows) for rows in zip(*(p.task_rows for p in plan.phases), strict=True)]
    return (
        plan,
        [replace(r, rows_per_epoch=n) for r, n in zip(reports, first, strict=True)],
        [replace(r, rows_per_epoch=n) for r, n in zip(reports, largest, strict=True)],
    )


def _fill_coverage(
    reports: list[TaskReport], kept: Spans, kept_bounds: np.ndarray, hits: np.ndarray
) -> None:
    """Each task's draw figures, from how often each of its kept rows was drawn (``hits``)."""
    drawn = hits > 0
    figures = {
        "covered_rows": segment_sums(hits, kept_bounds),
        "covered_inst_tokens": segment_sums(kept.inst_len * hits, kept_bounds),
        "covered_resp_tokens": segment_sums(kept.resp_len * hits, kept_bounds),
        "unique_rows": segment_sums(drawn, kept_bounds),
        "unique_tokens": segment_sums(
            np.where(drawn, kept.inst_len + kept.resp_len, 0), kept_bounds
        ),
    }
    columns = {name: values.tolist() for name, values in figures.items()}
    for index, report in enumerate(reports):
        stats = report.stats
        for name, values in columns.items():
            setattr(stats, name, values[index])
        stats.covered_tokens = stats.covered_inst_tokens + stats.covered_resp_tokens
