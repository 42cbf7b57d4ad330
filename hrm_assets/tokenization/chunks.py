"""Tokenizing many cleaned files, chunk by chunk: each chunk decided under its folders' locks
(reuse a current folder or plan its write) and encoded by one call of the Rust core, two chunks
in work at once and later ones encoded while the caller handles earlier outcomes."""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hrm_assets.common.atomic import (
    atomic_write_text,
    exclusive_lock,
    lock_path_for,
    remove_leftovers,
    remove_leftovers_of_many,
)
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import CleanedFile
from hrm_assets.contracts.framing import Framing
from hrm_assets.tokenization.outcomes import (
    TokenizeFailure,
    TokenizeOutcome,
    reused_outcome,
    written_outcome,
)
from hrm_assets.tokenization.output_folders import check_roots_apart, is_owned, refuse_foreign
from hrm_assets.tokenization.tokenizer_setup import TokenizerLike, TokenizerSetup, as_setup
from hrm_assets.tokenization.versions import (
    METADATA_FILE,
    expected_metadata,
    refreshed_metadata_text,
    reusable_metadata,
)

# Files decided and written per call of the Rust core: bounds the locks (file descriptors) held
# at once, and lets the outcomes of one chunk be recorded while the next is encoded.
CHUNK_FILES = 256
# Two chunks run at once, so that while one is decided (source hashes, in Python) or made
# durable and renamed (one thread), the other keeps the encoding threads busy; and up to three
# are done ahead of the caller, which records the outcomes of the chunk before.
CHUNKS_IN_FLIGHT = 2
CHUNKS_AHEAD = 3


def tokenize_file(
    cleaned: CleanedFile,
    out_root: Path,
    tokenizer: TokenizerLike,
    framing: Framing | None = None,
    threads: int | None = None,
) -> TokenizeOutcome:
    """Tokenize one cleaned file into ``out_root/<safe name>/``, unless it is already current.

    ``tokenizer`` is a ``TokenizerSetup`` or a tokenizer path (then ``framing`` defaults to
    data_io's). Waits while another process holds the folder's lock.

    Raises ``hrm_assets.cleaning.rows.RowError`` for a bad row (naming file, row and field),
    ``ValueError`` for an unreadable file or a framing token missing from the vocabulary, and
    ``OSError`` for IO failures; the folder is then left as it was.
    """
    (result,) = tokenize_files([cleaned], out_root, tokenizer, framing, threads=threads)
    if isinstance(result, TokenizeFailure):
        raise result.error
    return result


def tokenize_files(
    files: Sequence[CleanedFile],
    out_root: Path,
    tokenizer: TokenizerLike,
    framing: Framing | None = None,
    threads: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> Iterator[TokenizeOutcome | TokenizeFailure]:
    """Tokenize many cleaned files, skipping current folders, as :func:`tokenize_file` does
    for one: yields one outcome or failure per file, chunk by chunk in name order, each as
    soon as its folder is in place (and durable).

    Each chunk is decided under its folders' locks and encoded by one call of the Rust core,
    several files at once, with one durable sync for the chunk. Two chunks are in work at
    once (:data:`CHUNKS_IN_FLIGHT`), and later chunks are encoded while the caller handles
    the outcomes of earlier ones. ``progress(bytes)`` gets the cleaned
    bytes done (from a worker thread). A failing file does not stop the others; setup errors
    (the tokenizer cannot be loaded) raise.
    """
    setup = as_setup(tokenizer, framing)
    setup.encoder()
    check_roots_apart({item.root for item in files}, out_root)
    ordered = sorted(files, key=lambda item: item.safe_name)
    chunks = [ordered[i : i + CHUNK_FILES] for i in range(0, len(ordered), CHUNK_FILES)]
    stop = threading.Event()

    def chunk_results(chunk: Sequence[CleanedFile]) -> list[TokenizeOutcome | TokenizeFailure]:
        if stop.is_set():
            return []
        return _tokenize_chunk(chunk, Path(out_root), setup, threads, progress)

    with ThreadPoolExecutor(CHUNKS_IN_FLIGHT, thread_name_prefix="hrm-tokenize-chunks") as pool:
        waiting = iter(chunks)
        started = collections.deque(
            pool.submit(chunk_results, chunk) for chunk in itertools.islice(waiting, CHUNKS_AHEAD)
        )
        try:
            while started:
                done = started.popleft().result()
                for chunk in itertools.islice(waiting, 1):
                    started.append(pool.submit(chunk_results, chunk))
                yield from done
        finally:
            stop.set()
            for future in started:
                future.cancel()


def _tokenize_chunk(
    chunk: Sequence[CleanedFile],
    out_root: Path,
    setup: TokenizerSetup,
    threads: int | None,
    progress: Callable[[int], object] | None,
) -> list[TokenizeOutcome | TokenizeFailure]:
    def encode(planned: list[tuple[CleanedFile, dict]]) -> list:
        jobs = [
            (str(item.path), str(out_root / item.safe_name), json.dumps(metadata))
            for item, metadata in planned
        ]
        # Contamination and duplicates in the same read (contamination/tokenization_index.py).
        from hrm_assets.common.settings import data_root
        from hrm_assets.contamination.tokenization_index import scan_options

        return setup.encoder().tokenize_files(
            jobs, num_threads=threads, progress=progress, **scan_options(data_root())
        )

    return tokenize_locked_chunk(
        chunk, out_root, lambda item, folder: _reuse_or_plan(item, folder, setup), encode, progress
    )


def tokenize_locked_chunk(
    chunk: Sequence[CleanedFile],
    out_root: Path,
    plan: Callable[[CleanedFile, Path], TokenizeOutcome | dict],
    encode: Callable[[list[tuple[CleanedFile, dict]]], list],
    progress: Callable[[int], object] | None = None,
) -> list[TokenizeOutcome | TokenizeFailure]:
    """One chunk under its folders' locks, whatever the files are read from: dead writers'
    leftovers removed, each file's folder reused or planned by ``plan(item, folder)`` (an
    outcome, or the metadata to write it with; ``ValueError``/``OSError`` fail that file
    only), the planned ones written by one ``encode([(item, metadata)])`` (a result or an
    exception per file, in order). Outcomes in chunk order."""
    folders = [out_root / item.safe_name for item in chunk]
    with contextlib.ExitStack() as locks:
        for folder in folders:
            locks.enter_context(exclusive_lock(lock_path_for(folder)))
        # Whoever wrote these leftovers held these locks, so they are dead.
        remove_leftovers_of_many(folders)
        for folder in folders:
            if is_owned(folder):
                remove_leftovers(folder / METADATA_FILE)
        results: list[TokenizeOutcome | TokenizeFailure | None] = []
        pending: list[tuple[int, CleanedFile, dict]] = []
        for item, folder in zip(chunk, folders, strict=True):
            try:
                decided = plan(item, folder)
            except (ValueError, OSError) as error:
                decided = TokenizeFailure(item.safe_name, error)
            if isinstance(decided, dict):
                pending.append((len(results), item, decided))
                results.append(None)
            else:
                results.append(decided)
                if progress is not None and isinstance(decided, TokenizeOutcome):
                    progress(decided.bytes)
        written = encode([(item, metadata) for _, item, metadata in pending]) if pending else []
        for (index, item, metadata), result in zip(pending, written, strict=True):
            if isinstance(result, Exception):
                results[index] = TokenizeFailure(item.safe_name, result)
                continue
            results[index] = written_outcome(
                item.safe_name, metadata, result, out_root / item.safe_name
            )
    return [result for result in results if result is not None]


def reuse_or_metadata(name: str, folder: Path, metadata: dict) -> TokenizeOutcome | dict:
    """With ``folder``'s lock held: the outcome of reusing it when it is current for
    ``metadata`` (its ``metadata.json`` refreshed if only the recorded time moved), else
    ``metadata`` to write it with."""
    current = reusable_metadata(folder, metadata)
    if current is None:
        return metadata
    refreshed = refreshed_metadata_text(current, metadata)
    if refreshed is not None:
        atomic_write_text(folder / METADATA_FILE, refreshed)
    return reused_outcome(name, current, metadata, folder)


def _reuse_or_plan(
    cleaned: CleanedFile, folder: Path, setup: TokenizerSetup
) -> TokenizeOutcome | dict:
    """The outcome of reusing ``folder`` if it is current, else the metadata to write it
    with. Call with the folder's lock held. Raises :class:`ForeignOutputError` if ``folder``
    holds something this tool did not write."""
    refuse_foreign(folder)
    if not is_utf8(cleaned.relative):
        # metadata.json records the name as UTF-8 JSON (as data_io's does): no such name.
        raise ValueError(
            f"{os.fsencode(cleaned.path)!r}: the file name is not UTF-8, which metadata.json "
            "cannot record; rename the file"
        )
    stat = cleaned.path.stat()
    metadata = expected_metadata(
        cleaned.relative, stat.st_size, stat.st_mtime, file_sha256(cleaned.path), setup
    )
    return reuse_or_metadata(cleaned.safe_name, folder, metadata)


def is_utf8(name: str) -> bool:
    """Whether a file name decoded by Python (undecodable bytes as lone surrogates) is UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
