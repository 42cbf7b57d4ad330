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

The run itself is here; its parts are rooms of their own: :mod:`~hrm_assets.sampling.config`
(what is asked), :mod:`~hrm_assets.sampling.task_folders` (reading the inputs),
:mod:`~hrm_assets.sampling.task_reports` (each task's rule and figures),
:mod:`~hrm_assets.sampling.preflight` (warnings and refusals before drawing),
:mod:`~hrm_assets.sampling.output_guard` (the folder replaced and its lock),
:mod:`~hrm_assets.sampling.epoch_writing` (the epochs drawn and written),
:mod:`~hrm_assets.sampling.sampled_files` (``metadata.json``, ``manifest.json``) and
:mod:`~hrm_assets.sampling.result` (what a run returns).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hrm_assets.common.atomic import atomic_directory, remove_leftovers
from hrm_assets.common.progress import progress_bar
from hrm_assets.common.settings import METADATA_FILE, TOKENIZER_INFO_FILE, TOKENS_FILE
from hrm_assets.sampling.arrays import (
    ManifestEntry,
    TokenCopyError,
    TokenSource,
    concatenate_tokens,
)
from hrm_assets.sampling.config import (
    RunWarnings,
    SamplingConfig,
    SamplingError,
    Warn,
    config_error_message,
    make_config,
)
from hrm_assets.sampling.epoch_budget import free_space
from hrm_assets.sampling.epoch_writing import (
    MixtureDemand,
    WrittenEpochs,
    plan_mixture,
    write_epochs,
)
from hrm_assets.sampling.mixture.config import (
    MixtureConfig,
    MixtureConfigError,
    check_phases_fit,
    load_mixture,
)
from hrm_assets.sampling.mixture.report import mixture_report
from hrm_assets.sampling.output_guard import check_output_path, exclusive_output, refuse_unproven
from hrm_assets.sampling.prefix_config import PrefixConfigError, PrefixRule, load_prefix_rules
from hrm_assets.sampling.preflight import (
    ambiguity_warnings,
    check_budget,
    check_source_registry,
    empty_epochs_message,
    short_after_truncate_warning,
    unmatched_rule_warnings,
)
from hrm_assets.sampling.result import SamplingResult, sampling_result
from hrm_assets.sampling.sampled_files import (
    SampledMetadata,
    token_dtype,
    write_manifest,
    write_metadata,
)
from hrm_assets.sampling.task_folders import (
    SPAN_FIELDS,
    Spans,
    check_one_tokenizer,
    load_spans,
    load_tokenizer_info,
    npy_layout,
    read_span_table,
    task_directories,
    token_count,
)
from hrm_assets.sampling.task_reports import (
    GLOBAL_CATEGORY,
    CoverageStats,
    FilterCounts,
    TaskReport,
    fill_coverage,
    filter_rows,
    report_tasks,
    rows_per_epoch,
    task_category,
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

# The sampler's public names, wherever they are defined: callers import them from here.
__all__ = [
    "GLOBAL_CATEGORY",
    "SPAN_FIELDS",
    "TOKENS_FILE",
    "CoverageStats",
    "FilterCounts",
    "SampledMetadata",
    "SamplingConfig",
    "SamplingError",
    "SamplingResult",
    "Spans",
    "TaskReport",
    "Warn",
    "config_error_message",
    "filter_rows",
    "load_spans",
    "load_tokenizer_info",
    "make_config",
    "npy_layout",
    "read_span_table",
    "rows_per_epoch",
    "sample_tokenized",
    "task_category",
    "task_directories",
    "token_count",
    "token_dtype",
]


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
    output = check_output_path(config)
    run = _Run(config, rules, mixture, output, RunWarnings(warn), progress, copy_workers)
    try:
        with _held_still(config.tokenized_path, log) as snapshot:
            return _sample_snapshot(run, snapshot)
    except OSError as exc:
        # A write or fsync names no file: a full disk said only "[Errno 28] No space left on
        # device". The output it was building is named instead (its staged copy is gone).
        if exc.filename is None and exc.errno is not None:
            raise type(exc)(exc.errno, exc.strerror, os.fspath(output)) from None
        raise


@dataclass(frozen=True)
class _Run:
    """One run's settings, checked rules and output folder."""

    config: SamplingConfig
    rules: list[PrefixRule]
    mixture: MixtureConfig | None
    output: Path
    warnings: RunWarnings
    progress: bool
    copy_workers: int


@dataclass(frozen=True)
class _TokenizedInput:
    """The held-still tokenized root, proven and described before anything is written."""

    task_dirs: list[Path]
    tokenizer_info: dict[str, Any]
    tokenizer_sha256: str | None
    tokenizer: TokenizerChoice
    dtype: np.dtype  # of the output's tokens.npy
    sources: list[TokenSource]  # each task's tokens.npy, its header read

    @property
    def names(self) -> list[str]:
        return [task_dir.name for task_dir in self.task_dirs]

    @property
    def counts(self) -> list[int]:
        return [source.count for source in self.sources]

    @property
    def vocab_size(self) -> float | None:
        return self.tokenizer_info.get("vocab_size")


@dataclass(frozen=True)
class _DrawnEpochs:
    """The rows each task keeps and the epochs drawn from them."""

    reports: list[TaskReport]
    kept: Spans  # kept rows, offset into the output's tokens.npy, responses truncated
    kept_bounds: np.ndarray  # task t owns kept rows kept_bounds[t]:kept_bounds[t + 1]
    mixture: MixtureDemand | None
    written: WrittenEpochs


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


def _sample_snapshot(run: _Run, snapshot: TokenizedSnapshot) -> SamplingResult:
    """:func:`sample_tokenized` once the tokenized root is held still (``snapshot``, released
    after the last read of it)."""
    tokenized = _checked_input(run, snapshot)
    output = run.output
    with exclusive_output(output):
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
                tokenized.sources,
                tokenized.dtype,
                workers=run.copy_workers,
                progress=run.progress,
                stop=stop,
            )
            try:
                drawn = _draw_epochs(run, tokenized, staged, free_bytes)
            except BaseException:
                stop.set()
                raise
            tokens_entry = _copied_tokens(run, tokenized, copying)
            # The tokenized root has been read: tokenizers may go on (and a folder no lock
            # held must not have changed meanwhile).
            snapshot.release()
            result = _write_described_output(run, tokenized, drawn, staged, tokens_entry)
            # Checked again as late as possible: anything put into the old output while this
            # run worked is refused too, not replaced.
            refuse_unproven(output)
    return result


def _checked_input(run: _Run, snapshot: TokenizedSnapshot) -> _TokenizedInput:
    """Prove the tokenized task folders and choose the tokenizer shipped and the token dtype;
    warnings go to the run."""
    config, note = run.config, run.warnings
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
    for message in ambiguity_warnings(names, run.rules):
        note(message)
    for message in unmatched_rule_warnings(names, run.rules, config):
        note(message)
    vocab_size = tokenizer_info.get("vocab_size")
    if vocab_size is None:
        note(
            f"{config.tokenized_path / TOKENIZER_INFO_FILE}: no vocab_size; tokens are stored "
            f"as int32 and HRM-Text, which reads tokenizer_info.vocab_size, cannot load them"
        )
    # Every tokens.npy header is checked before the copy starts.
    sources = [
        TokenSource(task_dir / TOKENS_FILE, *npy_layout(task_dir / TOKENS_FILE))
        for task_dir in task_dirs
    ]
    return _TokenizedInput(
        task_dirs, tokenizer_info, tokenizer_sha256, tokenizer, token_dtype(vocab_size), sources
    )


def _draw_epochs(
    run: _Run, tokenized: _TokenizedInput, staged: Path, free_bytes: int
) -> _DrawnEpochs:
    """Read and check every span, apply the rules, refuse what cannot fit in ``free_bytes`` or
    would be empty, then draw and write the epochs into ``staged``."""
    config, note = run.config, run.warnings
    counts = tokenized.counts
    # A context manager, so the bar ends its line even when a folder is rejected.
    with progress_bar(run.progress, total=len(tokenized.task_dirs), desc="Reading indices") as bar:
        table, bounds = read_span_table(tokenized.task_dirs, counts, bar.update)
    reports, kept, kept_bounds = report_tasks(
        tokenized.names, table, bounds, counts, run.rules, config
    )
    del table
    mixture = None
    if run.mixture is not None:
        mixture = plan_mixture(run.mixture, reports, run.rules, config)
        reports = mixture.reports
        for message in mixture.plan.warnings:
            note(message)
    check_budget(
        reports if mixture is None else mixture.largest,
        run.rules,
        config,
        run.output,
        sum(counts) * tokenized.dtype.itemsize,
        free_bytes,
    )
    short = short_after_truncate_warning(reports, config)
    if short is not None:
        note(short)
    if sum(report.rows_per_epoch for report in reports) == 0:
        raise SamplingError(empty_epochs_message(reports, config))
    written = write_epochs(
        staged,
        reports,
        kept,
        kept_bounds,
        config,
        run.progress,
        None if mixture is None else mixture.plan,
    )
    fill_coverage(reports, kept, kept_bounds, written.hits)
    return _DrawnEpochs(reports, kept, kept_bounds, mixture, written)


def _copied_tokens(
    run: _Run, tokenized: _TokenizedInput, copying: Future[tuple[int, ManifestEntry]]
) -> ManifestEntry:
    """Wait for the copy of the tokens; refuse token ids the output's dtype cannot hold, warn
    of ids outside the vocabulary. Returns the manifest entry of ``tokens.npy``."""
    try:
        max_id, entry = copying.result()
    except TokenCopyError as exc:
        raise SamplingError(str(exc)) from None
    dtype, vocab_size = tokenized.dtype, tokenized.vocab_size
    if max_id > np.iinfo(dtype).max:
        # data_io stores such ids wrapped around (70535 becomes 4999 in uint16): a
        # different token, silently. Never written; the staged folder goes.
        raise SamplingError(
            f"{run.config.tokenized_path / TOKENIZER_INFO_FILE}: vocab_size {vocab_size} "
            f"stores tokens as {dtype.name} (ids up to {np.iinfo(dtype).max:,}), but the "
            f"tokenized folders hold token id {max_id:,}; ids are never wrapped: fix "
            f"vocab_size or tokenize again with this tokenizer. Nothing written"
        )
    if vocab_size is not None and max_id >= vocab_size:
        run.warnings(f"token id {max_id} is outside the vocabulary (vocab_size {vocab_size})")
    return entry


def _write_described_output(
    run: _Run,
    tokenized: _TokenizedInput,
    drawn: _DrawnEpochs,
    staged: Path,
    tokens_entry: ManifestEntry,
) -> SamplingResult:
    """Write what describes the staged arrays (``metadata.json``, ``tokenizer/``,
    ``manifest.json``, the data card); returns the run's result."""
    config = run.config
    entries = dict(drawn.written.entries)
    entries[TOKENS_FILE] = tokens_entry
    metadata, entries[METADATA_FILE] = write_metadata(
        staged,
        tokenized.tokenizer_info,
        config.context_size,
        drawn.written.total_tokens,
        config.epochs,
    )
    if tokenized.tokenizer.tokenizer_json is not None:
        entries.update(
            write_tokenizer_folder(
                staged / TOKENIZER_DIR,
                tokenized.tokenizer.tokenizer_json,
                tokenized.tokenizer_info,
                max_seq_len=config.context_size - 1,  # HRM-Text's, after the shift
            )
        )
    manifest = write_manifest(staged, entries)
    result = sampling_result(
        config,
        run.output,
        tokenized.dtype,
        tokenized.counts,
        drawn.reports,
        drawn.written.tokens,
        metadata,
        tokenized.tokenizer,
        run.warnings.lines,
    )
    if drawn.mixture is not None:
        result = replace(
            result,
            epoch_rows=drawn.mixture.plan.epoch_rows(),
            mixture=mixture_report(
                drawn.mixture.plan,
                drawn.written.phase_hits,
                drawn.kept.inst_len + drawn.kept.resp_len,
                drawn.kept_bounds,
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
            rules=run.rules,
            tokenizer_sha256=tokenized.tokenizer_sha256,
        )
    except DataCardError as exc:
        raise SamplingError(str(exc)) from None
    return result
