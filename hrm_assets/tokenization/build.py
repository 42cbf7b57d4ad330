"""The tokenized build of a set of partitions: which cleaned file each partition is, where the
folders are written (on disk or in object storage) and the stream of per-file outcomes.

Whether a folder is current is decided per file as it is reached (``tokenize_files`` on disk,
``tokenize_remote`` in object storage: the data version its metadata records against the one
this file and tokenizer give). The Dagster asset records the outcomes and their checks.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.layout import CleanedFile, LayoutError
from hrm_assets.common.object_mirror import mirror_tree
from hrm_assets.common.settings import TOKENIZER_INFO_FILE, TOKENIZER_JSON
from hrm_assets.common.storage import ObjectRoot
from hrm_assets.contracts.framing import Framing
from hrm_assets.tokenization.chunks import tokenize_files
from hrm_assets.tokenization.objects_to_disk import CleanedObjects, tokenize_objects
from hrm_assets.tokenization.outcomes import TokenizeFailure, TokenizeOutcome
from hrm_assets.tokenization.output_folders import remove_owned_output
from hrm_assets.tokenization.partitioning import partition_file
from hrm_assets.tokenization.remote import (
    RemoteCleaned,
    RemoteTokenized,
    mirror_sidecars,
    tokenize_remote,
)
from hrm_assets.tokenization.tokenize import write_tokenizer_info
from hrm_assets.tokenization.tokenizer_setup import TokenizerSetup

# How often a long run says how far it is.
PROGRESS_SECONDS = 10.0
# A cleaned root in object storage and the tokenized root written there.
ObjectRoots = tuple[RemoteCleaned, RemoteTokenized]


def tokenizer_setup(tokenizer: DataRoot) -> TokenizerSetup:
    """The tokenizer: its file, or when its root is in object storage its working copy
    (refreshed by ETag), recorded in ``tokenizer_info.json`` by its URL."""
    tokenizer_json = tokenizer.local / TOKENIZER_JSON
    remote = tokenizer.remote
    if remote is None:
        return TokenizerSetup.load(tokenizer_json, Framing())
    mirror_tree(remote, select=lambda relative: relative == TOKENIZER_JSON)
    setup = TokenizerSetup.load(tokenizer_json, Framing())
    return dataclasses.replace(setup, given_path=str(remote.join(TOKENIZER_JSON)))


def object_roots(cleaned: DataRoot, tokenized: DataRoot) -> ObjectRoots | None:
    """The cleaned and tokenized roots in object storage, or None when both are on disk. One
    of each is refused: the step reads one and writes the other by one protocol."""
    if cleaned.remote is not None and tokenized.remote is not None:
        return RemoteCleaned.scan(cleaned.remote), RemoteTokenized(tokenized.remote)
    if cleaned.remote is not None or tokenized.remote is not None:
        raise ValueError(
            f"cleaned root {cleaned} and tokenized root {tokenized}: put both on disk or both "
            "in object storage"
        )
    return None


def cleaned_files_for(
    spec: SourceSpec,
    cleaned_root: Path,
    partitions: Sequence[str],
    remote: RemoteCleaned | CleanedObjects | None = None,
) -> tuple[list[CleanedFile], list[TokenizeFailure]]:
    """The cleaned file of each partition, and a failure naming each partition whose file is
    missing or ambiguous (two paths mapping to its folder). With ``remote``, looked up in its
    listing instead of on disk."""
    found, missing = [], []
    where = remote.root if remote is not None else cleaned_root
    for key in partitions:
        try:
            if remote is not None:
                item = remote.partition_file(spec, key)
            else:
                item = partition_file(spec, cleaned_root, key)
        except LayoutError as error:
            missing.append(TokenizeFailure(key, error))
            continue
        if item is None:
            problem = (
                f"cleaned file for partition {key!r} of {spec.name} not found under "
                f"{where}; rematerialize cleaned/{spec.name}"
            )
            missing.append(TokenizeFailure(key, FileNotFoundError(problem)))
        else:
            found.append(item)
    return found, missing


@dataclass
class TokenizedBuild:
    """A run's files and the stream of their outcomes, one per file, in name order."""

    files: list[CleanedFile]  # the partitions' cleaned files handed to the encoder
    failures: list[TokenizeFailure]  # partitions without an outcome, then the files that fail
    outcomes: Iterable[TokenizeOutcome | TokenizeFailure]
    vocab_size: int
    tokenized_root: Path  # on disk, or the working copy of a root in object storage
    remote: ObjectRoot | None = None  # the tokenized root when it is in object storage
    # Outcomes so far: folders written, and folders current (adopted ones included).
    counts: dict[str, int] = field(default_factory=lambda: {"tokenized": 0, "unchanged": 0})

    def batches(
        self, size: int, progress: Callable[[int], object] | None = None
    ) -> Iterator[list[TokenizeOutcome]]:
        """The outcomes in lists of at most ``size`` (their checks read a batch's arrays at
        once); failures go to ``failures``. ``progress(done)`` is called with the files done
        at most every :data:`PROGRESS_SECONDS`."""
        pending: list[TokenizeOutcome] = []
        last_report = time.monotonic()
        for done, result in enumerate(self.outcomes, start=1):
            if progress is not None and time.monotonic() - last_report >= PROGRESS_SECONDS:
                last_report = time.monotonic()
                progress(done)
            if isinstance(result, TokenizeFailure):
                self.failures.append(result)
                continue
            self.counts["unchanged" if result.skipped else "tokenized"] += 1
            pending.append(result)
            if len(pending) >= size:
                yield pending
                pending = []
        yield pending

    def folder_of(self, outcome: TokenizeOutcome) -> Path | ObjectRoot:
        """Where an outcome's folder is: on disk, or in object storage for a remote folder
        reused from its manifest (``output_dir`` None: nothing was downloaded)."""
        if outcome.output_dir is None:
            assert self.remote is not None
            return self.remote.join(outcome.safe_name)
        return outcome.output_dir

    def published_folder(self, outcome: TokenizeOutcome) -> Path | ObjectRoot:
        """Where an outcome's folder is published: its ``s3://`` URL when the tokenized root
        is in object storage (written or reused), else its folder on disk."""
        if self.remote is not None:
            return self.remote.join(outcome.safe_name)
        assert outcome.output_dir is not None
        return outcome.output_dir

    def sidecar_folders(self, outcomes: Sequence[TokenizeOutcome]) -> dict[str, Path]:
        """Where each outcome's contamination sidecars are read, by safe name: its folder, or
        for a remote folder reused from its manifest its place in the working copy, whose
        sidecars alone are refreshed (:func:`mirror_sidecars`) for these outcomes at once."""
        folders = {o.safe_name: o.output_dir for o in outcomes if o.output_dir is not None}
        reused = [outcome.safe_name for outcome in outcomes if outcome.output_dir is None]
        if reused:
            assert self.remote is not None
            local = mirror_sidecars(self.remote, reused)
            folders.update({name: local / name for name in reused})
        return folders


def build_on_disk(
    files: list[CleanedFile],
    failures: list[TokenizeFailure],
    tokenized_root: Path,
    setup: TokenizerSetup,
    threads: int | None,
    *,
    write_info: bool = True,
    kept: int = 0,
) -> TokenizedBuild:
    """Tokenize ``files`` into a tokenized root on disk, skipping current folders; ``kept``
    folders were found current before (adopted from another tool), and ``write_info=False``
    keeps the root's ``tokenizer_info.json`` as it is (another tool's that agrees)."""
    outcomes = tokenize_files(files, tokenized_root, setup, threads=threads)
    return _into_folders(files, failures, outcomes, tokenized_root, setup, write_info, kept)


def _into_folders(
    files: list[CleanedFile],
    failures: list[TokenizeFailure],
    outcomes: Iterator[TokenizeOutcome | TokenizeFailure],
    tokenized_root: Path,
    setup: TokenizerSetup,
    write_info: bool,
    kept: int,
) -> TokenizedBuild:
    """A build whose ``outcomes`` (not started yet) write folders of ``tokenized_root`` on
    disk, the root's ``tokenizer_info.json`` written first unless ``write_info`` is False."""
    if write_info:
        write_tokenizer_info(tokenized_root, setup)
    build = TokenizedBuild(
        files,
        failures,
        outcomes,
        vocab_size=recorded_vocab_size(tokenized_root),
        tokenized_root=tokenized_root,
    )
    build.counts["unchanged"] += kept
    return build


def build_in_object_storage(
    spec: SourceSpec,
    partitions: Sequence[str],
    roots: ObjectRoots,
    setup: TokenizerSetup,
    threads: int | None,
) -> TokenizedBuild:
    """Tokenize the partitions' cleaned objects into a tokenized root in object storage,
    skipping current folders (decided from listings and manifests, nothing downloaded)."""
    cleaned, out = roots
    files, failures = cleaned_files_for(spec, cleaned.local, partitions, cleaned)
    vocab_size = out.write_tokenizer_info(setup)
    return TokenizedBuild(
        files,
        failures,
        tokenize_remote(files, cleaned, out, setup, threads=threads),
        vocab_size=vocab_size,
        tokenized_root=DataRoot(out.root).local,
        remote=out.root,
    )


def build_on_disk_from_objects(
    files: list[CleanedFile],
    failures: list[TokenizeFailure],
    cleaned: CleanedObjects,
    tokenized_root: Path,
    setup: TokenizerSetup,
    threads: int | None,
    *,
    write_info: bool = True,
    kept: int = 0,
) -> TokenizedBuild:
    """Tokenize cleaned objects (adopted ``s3://`` roots, read where they are; their files
    found by :func:`cleaned_files_for`) into a tokenized root on disk, skipping folders
    current for the objects' content hashes; ``kept`` and ``write_info`` as for
    :func:`build_on_disk` (folders another tool wrote, adopted)."""
    options = cleaned.storage_options() if files else {}
    outcomes = tokenize_objects(files, cleaned, tokenized_root, setup, options, threads=threads)
    return _into_folders(files, failures, outcomes, tokenized_root, setup, write_info, kept)


def recorded_vocab_size(tokenized_root: Path) -> int:
    """The vocabulary size ``tokenizer_info.json`` of a tokenized root records."""
    return json.loads((tokenized_root / TOKENIZER_INFO_FILE).read_text("utf-8"))["vocab_size"]


def remove_owned_folder(tokenized: DataRoot, key: str) -> bool:
    """Delete the tokenized folder ``key`` if this project wrote it (its ``.hrm-data`` marker),
    on disk or in object storage; True if something was removed."""
    if tokenized.remote is not None:
        return RemoteTokenized(tokenized.remote).remove_owned(key)
    return remove_owned_output(tokenized.local, key)
