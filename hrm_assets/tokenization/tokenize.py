"""Tokenized folders (docs/CONTRACTS.md section 2): the Python face of the Rust encoder, and
data_io's tokenizer command.

    python -m hrm_assets.tokenization DIR... -o OUT --tokenizer-path PATH
        [--boq T] [--eoq T] [--eoa T] [--conditions k=v,...] [--threads N]

Every cleaned file under the DIRs becomes ``OUT/<safe name>/`` (arrays, ``metadata.json`` and
the ownership marker ``.hrm-data``), written atomically by ``hrm_assets._core``.

Incremental by content: a folder's ``metadata.json`` records data_io's ``source_mtime`` and
``source_size`` plus the source's and the tokenizer's SHA-256, the framing's hash, the code
version, the resulting data version, ``rows`` and ``tokens``. A file is skipped only when the
hashes, framing, code version and data version all match and the folder is complete, so a new
tokenizer redoes everything. Mtimes never decide: a touched but unchanged file is skipped (its
``source_mtime`` is refreshed). Folders whose cleaned file is gone are pruned, but only if they
carry the marker (folders written by other tools stay).

Unlike data_io, a bad row fails its file with one message naming file, row and field; the
command goes on with the other files and then exits non-zero listing the failures. As data_io
does, a null in a Parquet string column is read as the empty string; such nulls are counted
(``nulls`` in ``metadata.json``) and reported.

One writer per folder: deciding, writing and pruning a folder happen under its lock
``OUT/.<safe name>.lock`` (``hrm_assets.common.atomic.exclusive_lock``), so two runs on the same
output are serialized (the second one then finds the folder current and skips it). The lock
holder removes what killed writers of that folder left behind (``.tmp-`` copies); the command
also sweeps entries of ``OUT`` idle for a day that carry this project's own temporary names
(``atomic.is_own_temporary``; a user's ``.tmp-notes`` stays).

Nothing this tool did not write is replaced: a file, symlink or unmarked folder where an output
goes fails that file with an error naming it, and an output root that is, holds or lies inside
an input root is refused before anything is written. Every folder carries ``manifest.json``
(sizes and SHA-256 of its arrays, written by the Rust writer before the rename); a folder is
reused only if its manifest is there, every array has the recorded size and its
``metadata.json`` is its own (``hrm_assets.tokenization.identity``: it names this folder's
cleaned file and records its arrays' lengths).

What is encoded is what was hashed: the Rust reader hashes the bytes it parses, and a file
whose bytes differ from those hashed to decide (rewritten in place during the run) fails, with
nothing written. Inputs with no cleaned file at all (an unmounted disk) are refused before
anything is pruned, unless ``--allow-empty-input`` says they are meant.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import itertools
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from hrm_assets import _core
from hrm_assets.common.atomic import (
    TMP_PREFIX,
    atomic_write_text,
    exclusive_lock,
    lock_path_for,
    remove_leftovers,
    remove_leftovers_of_many,
    remove_stale_temporaries,
)
from hrm_assets.common.hashing import file_sha256, value_sha256
from hrm_assets.common.layout import CleanedFile, describe_skipped_link, scan_cleaned_tree
from hrm_assets.common.manifest import (
    MANIFEST_FILE,
    ManifestError,
    manifest_kind,
    read_manifest,
    sizes_match,
)
from hrm_assets.common.settings import TOKENIZER_INFO_FILE, TOKENIZER_JSON
from hrm_assets.tokenization.framing import (
    DEFAULT_BOQ,
    DEFAULT_EOA,
    DEFAULT_EOQ,
    Framing,
    parse_conditions,
    tokenizer_info_json,
)
from hrm_assets.tokenization.identity import folder_identity_problems, is_hrm_tokenized

CODE_VERSION = f"hrm-tokenize/{_core.FORMAT_VERSION}"
METADATA_FILE: str = _core.METADATA_FILE
OWNER_MARKER: str = _core.OWNER_MARKER
ARRAY_FILES: tuple[str, ...] = tuple(_core.ARRAY_FILES)
# Metadata fields that must all match for a folder to be reused.
_VERSION_FIELDS = ("source_sha256", "tokenizer_sha256", "framing", "code_version", "data_version")


def resolve_tokenizer_json(tokenizer_path: str | Path) -> Path:
    """The ``tokenizer.json`` a ``--tokenizer-path`` names: the file itself, or one in a folder.

    Raises ``FileNotFoundError`` (unlike data_io, Hub names are not downloaded).
    """
    path = Path(tokenizer_path)
    if path.is_dir():
        path = path / TOKENIZER_JSON
    if not path.is_file():
        raise FileNotFoundError(
            f"{tokenizer_path}: no tokenizer found (expected a tokenizer.json file or a folder "
            "holding one)"
        )
    return path


def framing_sha256(framing: Framing) -> str:
    return value_sha256(framing.model_dump())


@functools.lru_cache(maxsize=4)
def _load_encoder(tokenizer_json: str, tokenizer_sha256: str, framing_json: str) -> _core.Encoder:
    # Keyed by content hash as well as path, so a replaced tokenizer.json is reloaded.
    framing = Framing.model_validate_json(framing_json)
    return _core.Encoder(
        tokenizer_json, framing.boq, framing.eoq, framing.eoa, dict(framing.conditions)
    )


@dataclass(frozen=True)
class TokenizerSetup:
    """A tokenizer file identified by content, with the framing it is used with."""

    given_path: str
    tokenizer_json: Path
    tokenizer_sha256: str
    framing: Framing

    @classmethod
    def load(cls, tokenizer_path: str | Path, framing: Framing | None = None) -> TokenizerSetup:
        tokenizer_json = resolve_tokenizer_json(tokenizer_path)
        return cls(
            given_path=str(tokenizer_path),
            tokenizer_json=tokenizer_json,
            tokenizer_sha256=file_sha256(tokenizer_json),
            framing=framing if framing is not None else Framing(),
        )

    @property
    def framing_sha256(self) -> str:
        return framing_sha256(self.framing)

    def encoder(self) -> _core.Encoder:
        """The Rust encoder (cached per process). Raises ``ValueError`` if a framing token is
        not in the vocabulary."""
        return _load_encoder(
            str(self.tokenizer_json), self.tokenizer_sha256, self.framing.model_dump_json()
        )


TokenizerLike = TokenizerSetup | str | Path


def _as_setup(tokenizer: TokenizerLike, framing: Framing | None) -> TokenizerSetup:
    if isinstance(tokenizer, TokenizerSetup):
        if framing is not None and framing != tokenizer.framing:
            raise ValueError("framing differs from the TokenizerSetup's framing")
        return tokenizer
    return TokenizerSetup.load(tokenizer, framing)


@dataclass(frozen=True)
class TokenizeOutcome:
    safe_name: str
    skipped: bool
    rows: int
    tokens: int
    bytes: int  # size of the cleaned file
    data_version: str
    output_dir: Path
    text_bytes: int = 0  # UTF-8 bytes of the rows' text
    nulls: int = 0  # Parquet nulls read as empty strings


def data_version(source_sha256: str, setup: TokenizerSetup) -> str:
    """The data version of a tokenized folder: a hash of everything its bytes depend on."""
    return value_sha256(
        {
            "source_sha256": source_sha256,
            "tokenizer_sha256": setup.tokenizer_sha256,
            "framing": setup.framing_sha256,
            "code_version": CODE_VERSION,
        }
    )


def expected_data_version(
    cleaned: CleanedFile | Path, tokenizer: TokenizerLike, framing: Framing | None = None
) -> str:
    """The data version ``tokenize_file`` would record, computed without tokenizing."""
    path = cleaned.path if isinstance(cleaned, CleanedFile) else Path(cleaned)
    return data_version(file_sha256(path), _as_setup(tokenizer, framing))


def read_metadata(folder: Path) -> dict | None:
    """A tokenized folder's ``metadata.json``, or None if absent or unreadable."""
    try:
        value = json.loads((Path(folder) / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _reusable_metadata(folder: Path, expected: dict) -> dict | None:
    """The folder's metadata if the folder is complete, ours, and of the expected version."""
    metadata = read_metadata(folder)
    if not records_version(metadata, expected) or not (folder / OWNER_MARKER).is_file():
        return None
    if not all((folder / name).is_file() for name in ARRAY_FILES):
        return None
    # Complete means as written: a manifest listing exactly the arrays, each of its size.
    if not sizes_match(folder) or sorted(read_manifest(folder)["files"]) != sorted(ARRAY_FILES):
        return None
    # And of this file: metadata naming this folder's cleaned file, counts those of the arrays
    # (another file's arrays under this metadata pass every check above).
    if folder_identity_problems(folder, metadata):
        return None
    return metadata


def expected_metadata(
    source_path: str,
    source_size: int,
    source_mtime: float,
    source_sha256: str,
    setup: TokenizerSetup,
) -> dict:
    """The ``metadata.json`` fields a folder written now from this cleaned file records
    (before the encoder adds its counts); on disk and in object storage alike."""
    return {
        "source_mtime": int(source_mtime),
        "source_size": source_size,
        "source_sha256": source_sha256,
        "source_path": source_path,
        "tokenizer_sha256": setup.tokenizer_sha256,
        "framing": setup.framing_sha256,
        "code_version": CODE_VERSION,
        "data_version": data_version(source_sha256, setup),
    }


def records_version(metadata: dict | None, expected: dict) -> bool:
    """Whether a folder's metadata records the expected versions and its counts: its arrays
    are those a write now would give (whether they are complete is the caller's to check)."""
    return (
        metadata is not None
        and all(metadata.get(key) == expected[key] for key in _VERSION_FIELDS)
        and all(isinstance(metadata.get(key), int) for key in ("rows", "tokens"))
    )


def refreshed_metadata_text(current: dict, expected: dict) -> str | None:
    """``metadata.json`` of a reused folder with data_io's source fields made true again (same
    content, new time or path), or None when nothing changed."""
    stale = {key: value for key, value in expected.items() if current.get(key) != value}
    if not stale:
        return None
    return json.dumps(
        {**current, **stale}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def reused_outcome(
    safe_name: str, current: dict, expected: dict, output_dir: Path | None
) -> TokenizeOutcome:
    """The outcome of a folder kept as it is (``current``: its metadata)."""
    return TokenizeOutcome(
        safe_name=safe_name,
        skipped=True,
        rows=current["rows"],
        tokens=current["tokens"],
        bytes=expected["source_size"],
        data_version=expected["data_version"],
        output_dir=output_dir,  # type: ignore[arg-type]
        text_bytes=current.get("text_bytes", 0),
        nulls=current.get("nulls", 0),
    )


class ForeignOutputError(ValueError):
    """An output path holds something this tool did not write; it is never replaced."""


def refuse_foreign(folder: Path) -> None:
    """Raise :class:`ForeignOutputError` naming ``folder`` if something is there that this tool
    cannot prove it wrote (no ownership marker, or not a plain folder)."""
    if not os.path.lexists(folder) or is_owned(folder):
        return
    what = "a symlink" if folder.is_symlink() else "a folder" if folder.is_dir() else "a file"
    raise ForeignOutputError(
        f"{folder}: {what} that hrm-tokenize did not write (no {OWNER_MARKER} marker) is in the "
        "way of this output; it is left as it is: move it away or choose another -o"
    )


def _resolved(path: Path | str, what: str) -> Path:
    """``path`` resolved; ``ValueError`` naming it when it cannot be (a symlink loop)."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"{path}: the {what} cannot be resolved: {exc}") from None


def check_input_roots(inputs: Iterable[Path | str]) -> None:
    """Raise ``ValueError`` naming the first input root that is not a readable folder
    (missing, a file, a symlink loop, no permission)."""
    for root in inputs:
        try:
            os.stat(root)
        except OSError as exc:
            raise ValueError(f"{root}: not a directory: {exc.strerror}") from None
        if not os.path.isdir(root):
            raise ValueError(f"{root}: not a directory")


def refuse_output_folder_as_root(out_root: Path | str) -> None:
    """Raise ``ValueError`` when ``out_root`` is itself an output folder (it holds a
    ``manifest.json``: a sampled folder, an export, one tokenized folder): hrm-tokenize would
    write a tokenized root's folders and ``tokenizer_info.json`` into another kind's output."""
    out_root = Path(out_root)
    try:
        manifest = read_manifest(out_root)
    except ManifestError:
        if not (out_root / MANIFEST_FILE).is_file():
            return
        manifest = {"files": {}}
    kind = manifest_kind(out_root, manifest) or "unknown"
    raise ValueError(
        f"{out_root}: an output folder of kind {kind!r} (it holds {MANIFEST_FILE}), not a "
        "tokenized root: hrm-tokenize writes one folder per cleaned file under -o; choose "
        "another -o"
    )


def check_roots_apart(inputs: Iterable[Path | str], out_root: Path | str) -> None:
    """Raise ``ValueError`` if the output root is an input root, inside one, or holds one
    (compared resolved): outputs would replace the cleaned files and prune their folders."""
    out_resolved = _resolved(out_root, "output folder")
    for root in inputs:
        resolved = _resolved(root, "input folder")
        if resolved == out_resolved or resolved in out_resolved.parents:
            raise ValueError(
                f"{out_root}: the output folder is the input folder {root} or inside it; "
                "choose an -o outside every input"
            )
        if out_resolved in resolved.parents:
            raise ValueError(
                f"{root}: the input folder is inside the output folder {out_root}; "
                "choose an -o outside every input"
            )


# Files decided and written per call of the Rust core: bounds the locks (file descriptors) held
# at once, and lets the outcomes of one chunk be recorded while the next is encoded.
CHUNK_FILES = 256
# Two chunks run at once, so that while one is decided (source hashes, in Python) or made
# durable and renamed (one thread), the other keeps the encoding threads busy; and up to three
# are done ahead of the caller, which records the outcomes of the chunk before.
CHUNKS_IN_FLIGHT = 2
CHUNKS_AHEAD = 3


@dataclass(frozen=True)
class TokenizeFailure:
    """A file of a batch that could not be tokenized; its folder was left as it was."""

    safe_name: str
    error: Exception

    @property
    def message(self) -> str:
        return str(self.error)


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
    setup = _as_setup(tokenizer, framing)
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
        pending: list[tuple[int, CleanedFile, dict, int]] = []
        for item, folder in zip(chunk, folders, strict=True):
            try:
                decided = _reuse_or_plan(item, folder, setup)
            except (ValueError, OSError) as error:
                decided = TokenizeFailure(item.safe_name, error)
            if isinstance(decided, tuple):
                metadata, size = decided
                pending.append((len(results), item, metadata, size))
                results.append(None)
            else:
                results.append(decided)
                if progress is not None and isinstance(decided, TokenizeOutcome):
                    progress(decided.bytes)
        jobs = [
            (str(item.path), str(out_root / item.safe_name), json.dumps(metadata))
            for _, item, metadata, _ in pending
        ]
        written = setup.encoder().tokenize_files(jobs, num_threads=threads, progress=progress)
        for (index, item, metadata, size), result in zip(pending, written, strict=True):
            if isinstance(result, Exception):
                results[index] = TokenizeFailure(item.safe_name, result)
                continue
            results[index] = TokenizeOutcome(
                safe_name=item.safe_name,
                skipped=False,
                rows=result["rows"],
                tokens=result["tokens"],
                bytes=size,
                data_version=metadata["data_version"],
                output_dir=out_root / item.safe_name,
                text_bytes=result["text_bytes"],
                nulls=result["nulls"],
            )
    return [result for result in results if result is not None]


def _reuse_or_plan(
    cleaned: CleanedFile, folder: Path, setup: TokenizerSetup
) -> TokenizeOutcome | tuple[dict, int]:
    """The outcome of reusing ``folder`` if it is current, else the metadata (and source size)
    to write it with. Call with the folder's lock held. Raises :class:`ForeignOutputError` if
    ``folder`` holds something this tool did not write."""
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
    current = _reusable_metadata(folder, metadata)
    if current is None:
        return metadata, stat.st_size
    refreshed = refreshed_metadata_text(current, metadata)
    if refreshed is not None:
        atomic_write_text(folder / METADATA_FILE, refreshed)
    return reused_outcome(cleaned.safe_name, current, metadata, folder)


def is_utf8(name: str) -> bool:
    """Whether a file name decoded by Python (undecodable bytes as lone surrogates) is UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def write_tokenizer_info(
    out_root: Path, tokenizer: TokenizerLike, framing: Framing | None = None
) -> Path:
    """Write ``out_root/tokenizer_info.json`` with data_io's exact bytes (if they changed).

    ``tokenizer_path`` is recorded as given; ``vocab_size`` counts added tokens.
    """
    setup = _as_setup(tokenizer, framing)
    info = setup.framing.tokenizer_info(setup.given_path, setup.encoder().vocab_size)
    text = tokenizer_info_json(info)
    path = Path(out_root) / TOKENIZER_INFO_FILE
    with exclusive_lock(lock_path_for(path)):
        remove_leftovers(path)
        try:
            unchanged = path.read_text(encoding="utf-8") == text
        except OSError:
            unchanged = False
        if not unchanged:
            atomic_write_text(path, text)
    return path


def is_owned(folder: Path) -> bool:
    """Whether ``folder`` was written by this tool (and so may be replaced or pruned):
    :func:`hrm_assets.tokenization.identity.is_hrm_tokenized`."""
    return is_hrm_tokenized(folder)


def remove_owned_output(out_root: Path, safe_name: str) -> bool:
    """Delete ``out_root/<safe_name>`` if this tool wrote it; True if something was removed.

    Done under the folder's lock, so a run still writing the folder finishes first.
    """
    folder = Path(out_root) / safe_name
    if not folder.is_dir() or not is_owned(folder):
        return False
    with exclusive_lock(lock_path_for(folder)):
        remove_leftovers(folder)
        if not folder.is_dir() or not is_owned(folder):
            return False
        shutil.rmtree(folder)
    return True


def prune_orphans(out_root: Path, expected_safe_names: Iterable[str]) -> list[str]:
    """Remove owned folders of ``out_root`` that no cleaned file maps to; return their names.

    Folders without the ownership marker, files, and ``.tmp-`` entries are left alone (hidden
    folders such as ``.x.jsonl`` are a hidden cleaned file's output, and pruned like others).
    """
    out_root = Path(out_root)
    if not out_root.is_dir():
        return []
    expected = set(expected_safe_names)
    removed = []
    for entry in sorted(out_root.iterdir()):
        if entry.name in expected or entry.name.startswith(TMP_PREFIX):
            continue
        if remove_owned_output(out_root, entry.name):
            removed.append(entry.name)
    return removed


@dataclass
class TreeReport:
    outcomes: list[TokenizeOutcome] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (safe name, message)
    pruned: list[str] = field(default_factory=list)
    swept: list[str] = field(default_factory=list)  # stale .tmp- leftovers removed
    symlinks: list[Path] = field(default_factory=list)  # skipped links (CleanedScan.symlinks)
    seconds: float = 0.0


def tokenize_tree(
    dirs: Sequence[Path | str],
    out_root: Path | str,
    tokenizer_path: str | Path,
    framing: Framing | None = None,
    threads: int | None = None,
    progress: bool = True,
    allow_empty_input: bool = False,
) -> TreeReport:
    """data_io's tokenizer command: every cleaned file under ``dirs`` into ``out_root``.

    Sweeps stale ``.tmp-`` leftovers, writes ``tokenizer_info.json``, prunes owned orphans,
    then tokenizes every file with :func:`tokenize_files` (several at once, skipping current
    folders). Files are found as data_io finds them (:func:`scan_cleaned_tree`: hidden files
    are data, symlinked files are skipped and listed in the report). A failing file is
    recorded in the report and the others go on. Setup problems
    (no tokenizer, framing token not in the vocabulary, two files
    with one safe name) raise ``ValueError``/``OSError`` before anything is written.

    Inputs with no cleaned file at all (an unmounted disk, a wrong path) raise ``ValueError``
    before anything is pruned: pruning would remove every tokenized folder. With
    ``allow_empty_input`` they are taken at their word.
    """
    started = time.perf_counter()
    check_input_roots(dirs)
    setup = TokenizerSetup.load(tokenizer_path, framing)
    setup.encoder()
    check_roots_apart(dirs, out_root)
    refuse_output_folder_as_root(out_root)
    scan = scan_cleaned_tree([Path(d) for d in dirs])
    files = scan.files
    if not files and not allow_empty_input:
        raise ValueError(
            f"{', '.join(str(d) for d in dirs)}: no cleaned files (.jsonl, .parquet) in the "
            f"input (an unmounted disk? a wrong path?); nothing was pruned or written. To prune "
            f"every tokenized folder of {out_root}, pass --allow-empty-input"
        )
    out_root = Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    swept = [entry.name for entry in remove_stale_temporaries(out_root)]
    write_tokenizer_info(out_root, setup)
    report = TreeReport(
        pruned=prune_orphans(out_root, [f.safe_name for f in files]),
        swept=swept,
        symlinks=scan.symlinks,
    )
    with tqdm(
        total=sum(f.path.stat().st_size for f in files),
        unit="B",
        unit_scale=True,
        desc="tokenize",
        file=sys.stderr,
        disable=not progress,
    ) as bar:
        for result in tokenize_files(files, out_root, setup, threads=threads, progress=bar.update):
            if isinstance(result, TokenizeFailure):
                report.failures.append((result.safe_name, result.message))
            else:
                report.outcomes.append(result)
            bar.set_postfix_str(result.safe_name, refresh=False)
    report.seconds = time.perf_counter() - started
    return report


def _summary(report: TreeReport) -> str:
    done = [o for o in report.outcomes if not o.skipped]
    skipped = len(report.outcomes) - len(done)
    rows = sum(o.rows for o in report.outcomes)
    tokens = sum(o.tokens for o in report.outcomes)
    nulls = sum(o.nulls for o in report.outcomes)
    null_text = f", {nulls:,} Parquet null(s) read as empty strings" if nulls else ""
    mb = sum(o.bytes for o in done) / 1e6
    rate = f", {mb / report.seconds:.1f} MB/s" if done and report.seconds > 0 else ""
    symlink_text = f" and {len(report.symlinks)} symlinked" if report.symlinks else ""
    return (
        f"tokenized {len(done)} file(s), skipped {skipped} unchanged{symlink_text}, pruned "
        f"{len(report.pruned)}, failed {len(report.failures)}: {rows:,} rows, {tokens:,} tokens"
        f"{null_text} in {report.seconds:.1f} s{rate}"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hrm-tokenize",
        description="Tokenize cleaned JSONL/Parquet files into data_io's tokenized folders.",
    )
    parser.add_argument("dirs", nargs="+", type=Path, help="cleaned roots to scan")
    parser.add_argument("-o", "--output-dir", required=True, type=Path)
    parser.add_argument(
        "-t", "--tokenizer-path", required=True, help="tokenizer.json, or a folder holding one"
    )
    parser.add_argument("--boq", default=DEFAULT_BOQ)
    parser.add_argument("--eoq", default=DEFAULT_EOQ)
    parser.add_argument("--eoa", default=DEFAULT_EOA)
    parser.add_argument(
        "--conditions",
        nargs="+",
        default=None,
        metavar="TAG=TOKEN[,TAG=TOKEN...]",
        help="condition tags and their tokens (default: data_io's four)",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="encoding threads (default: all cores)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--allow-empty-input",
        action="store_true",
        help="inputs with no cleaned file are meant: prune every tokenized folder (without it, "
        "such inputs are refused)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads is not None and args.threads < 1:
        print("error: --threads must be at least 1", file=sys.stderr)
        return 2
    try:
        framing_args = dict(boq=args.boq, eoq=args.eoq, eoa=args.eoa)
        if args.conditions is not None:
            framing_args["conditions"] = parse_conditions(args.conditions)
        framing = Framing(**framing_args)
        report = tokenize_tree(
            args.dirs,
            args.output_dir,
            args.tokenizer_path,
            framing,
            threads=args.threads,
            progress=not args.no_progress,
            allow_empty_input=args.allow_empty_input,
        )
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for name in report.swept:
        print(f"removed {name} (left by a run that died over a day ago)", file=sys.stderr)
    for name in report.pruned:
        print(f"pruned {name} (its cleaned file is gone)", file=sys.stderr)
    for path in report.symlinks:
        print(
            f"warning: skipped {path}: {describe_skipped_link(path)} (data_io skips them too)",
            file=sys.stderr,
        )
    for outcome in report.outcomes:
        if outcome.nulls:
            print(
                f"warning: {outcome.safe_name}: {outcome.nulls:,} Parquet null(s) read as empty "
                "strings (as data_io reads them)",
                file=sys.stderr,
            )
    print(_summary(report), file=sys.stderr)
    for _, message in report.failures:
        print(f"error: {message}", file=sys.stderr)
    if report.failures:
        # A name that is not UTF-8 is shown escaped, as Python's own stderr would.
        names = ", ".join(
            name.encode("utf-8", "backslashreplace").decode("utf-8") for name, _ in report.failures
        )
        print(f"error: {len(report.failures)} file(s) failed: {names}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
