"""Tokenized folders (docs/CONTRACTS.md section 2): the Python face of the Rust encoder, and
:func:`tokenize_tree`, what data_io's tokenizer command does (its CLI:
:mod:`hrm_assets.tokenization.cli`).

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

Its parts: :mod:`~hrm_assets.tokenization.tokenizer_setup` (the tokenizer and its encoder),
:mod:`~hrm_assets.tokenization.versions` (when a folder is current),
:mod:`~hrm_assets.tokenization.output_folders` (ownership, roots kept apart, pruning),
:mod:`~hrm_assets.tokenization.chunks` (many files, chunk by chunk) and
:mod:`~hrm_assets.tokenization.outcomes`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from hrm_assets.common.atomic import (
    atomic_write_text,
    exclusive_lock,
    lock_path_for,
    remove_leftovers,
    remove_stale_temporaries,
)
from hrm_assets.common.layout import scan_cleaned_tree
from hrm_assets.common.settings import TOKENIZER_INFO_FILE
from hrm_assets.contracts.framing import Framing, tokenizer_info_json
from hrm_assets.tokenization.chunks import (
    CHUNK_FILES,
    CHUNKS_AHEAD,
    CHUNKS_IN_FLIGHT,
    is_utf8,
    tokenize_file,
    tokenize_files,
)
from hrm_assets.tokenization.outcomes import TokenizeFailure, TokenizeOutcome, reused_outcome
from hrm_assets.tokenization.output_folders import (
    ForeignOutputError,
    check_input_roots,
    check_roots_apart,
    is_owned,
    prune_orphans,
    refuse_foreign,
    refuse_output_folder_as_root,
    remove_owned_output,
)
from hrm_assets.tokenization.tokenizer_setup import (
    TokenizerLike,
    TokenizerSetup,
    as_setup,
    framing_sha256,
    resolve_tokenizer_json,
)
from hrm_assets.tokenization.versions import (
    ARRAY_FILES,
    CODE_VERSION,
    METADATA_FILE,
    OWNER_MARKER,
    data_version,
    expected_data_version,
    expected_metadata,
    read_metadata,
    records_version,
    refreshed_metadata_text,
)

# The stage's public names, wherever they are defined: callers import them from here.
__all__ = [
    "ARRAY_FILES",
    "CHUNKS_AHEAD",
    "CHUNKS_IN_FLIGHT",
    "CHUNK_FILES",
    "CODE_VERSION",
    "METADATA_FILE",
    "OWNER_MARKER",
    "TOKENIZER_INFO_FILE",
    "ForeignOutputError",
    "TokenizeFailure",
    "TokenizeOutcome",
    "TokenizerLike",
    "TokenizerSetup",
    "TreeReport",
    "check_input_roots",
    "check_roots_apart",
    "data_version",
    "expected_data_version",
    "expected_metadata",
    "framing_sha256",
    "is_owned",
    "is_utf8",
    "prune_orphans",
    "read_metadata",
    "records_version",
    "refreshed_metadata_text",
    "refuse_foreign",
    "refuse_output_folder_as_root",
    "remove_owned_output",
    "resolve_tokenizer_json",
    "reused_outcome",
    "tokenize_file",
    "tokenize_files",
    "tokenize_tree",
    "write_tokenizer_info",
]


def write_tokenizer_info(
    out_root: Path, tokenizer: TokenizerLike, framing: Framing | None = None
) -> Path:
    """Write ``out_root/tokenizer_info.json`` with data_io's exact bytes (if they changed).

    ``tokenizer_path`` is recorded as given; ``vocab_size`` counts added tokens.
    """
    setup = as_setup(tokenizer, framing)
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
