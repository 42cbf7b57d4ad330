"""``manifest.json``: the size and SHA-256 of every array of an output folder.

Tokenized folders get theirs from the Rust writer (``rust_tokenizer/src/tokenize/write.rs``),
sampled folders from the sampler, which hashes each array as it writes it
(``hrm_assets.sampling.arrays``);
both write it into the staged folder before the atomic rename, so a folder in place always
describes its own bytes. The format, identical from both writers (compact JSON, keys sorted, no
timestamps, so equal arrays give equal bytes)::

    {"files": {"<relative path>": {"sha256": "<hex>", "size": <bytes>}, ...},
     "format": "hrm-data-manifest/1"}

The listed files are the folder's ``.npy`` arrays (``epoch_N/`` ones included, as POSIX
relative paths) and, in a sampled folder, everything else HRM-Text reads: ``metadata.json``
(its ``tokenizer_info.vocab_size`` decides the token dtype) and the files of ``tokenizer/``.
A tokenized folder's ``metadata.json`` is not listed: HRM-Text never reads it, and the
tokenizer refreshes its ``source_mtime`` in place when a touched but unchanged file is skipped.

``kind`` says which command wrote the folder (:data:`KINDS`: ``tokenized``, ``sampled``,
``megatron``, ``packed``), and a command replaces only a folder of its own kind
(:func:`kind_problem`): a manifest proves what a folder holds, not whose output it is. Manifests
written before the field existed are read as they are; their kind is told from what they list
(:func:`manifest_kind`: ``epoch_N/`` arrays are a sampled folder's, ``export.json`` names its
export's format, the ``.hrm-data`` marker is a tokenized folder's).

:func:`verify_folders` recomputes the manifests of many folders (their files hashed in one call
of the Rust core); ``hrm-verify`` and the ``manifest_valid`` asset checks call it, through
:func:`verify_folder` for one folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from hrm_assets import _core
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import is_hidden_name
from hrm_assets.common.settings import METADATA_FILE

MANIFEST_FILE: str = _core.MANIFEST_FILE
MANIFEST_FORMAT: str = _core.MANIFEST_FORMAT
ARRAY_SUFFIX = ".npy"
# What HRM-Text reads from a sampled folder besides the arrays, so what its manifest must list.
SAMPLED_METADATA_FILE = METADATA_FILE  # HRM-Text reads it beside the epochs
EPOCH_PREFIX = "epoch_"
KIND_FIELD = "kind"
# The Rust writer records it in tokenized manifests (``_core.TOKENIZED_KIND``, the same string).
TOKENIZED_KIND = "tokenized"
SAMPLED_KIND = "sampled"
MEGATRON_KIND = "megatron"
PACKED_KIND = "packed"
KINDS = (TOKENIZED_KIND, SAMPLED_KIND, MEGATRON_KIND, PACKED_KIND)
# An export's description, listed in its manifest; its ``format`` is ``hrm-data-<kind>/N``.
EXPORT_DESCRIPTION = "export.json"


class ManifestError(ValueError):
    """A manifest is missing or unreadable; the message names the file."""


def array_files(folder: Path) -> list[str]:
    """Relative POSIX paths of the ``.npy`` files under ``folder``, sorted (hidden entries
    skipped, symlinked directories not entered; nothing for a folder that does not exist)."""
    found = []
    pending = [("", os.fspath(folder))]
    while pending:
        prefix, directory = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if is_hidden_name(entry.name):  # nor anything under it
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        pending.append((f"{prefix}{entry.name}/", entry.path))
                    elif entry.name.endswith(ARRAY_SUFFIX) and entry.is_file():
                        found.append(prefix + entry.name)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
    return sorted(found)


def file_entry(path: Path) -> dict[str, int | str]:
    """``{"sha256": hex, "size": bytes}`` of one file."""
    return {"sha256": file_sha256(path), "size": Path(path).stat().st_size}


def build_manifest(folder: Path, files: list[str] | None = None, kind: str | None = None) -> dict:
    """The manifest of ``folder``'s arrays (or of ``files``, relative paths), as a dict,
    recording ``kind`` when given."""
    folder = Path(folder)
    names = array_files(folder) if files is None else sorted(files)
    manifest = {
        "files": {name: file_entry(folder / name) for name in names},
        "format": MANIFEST_FORMAT,
    }
    return manifest if kind is None else with_kind(manifest, kind)


def manifest_bytes(manifest: dict) -> bytes:
    """The exact bytes of ``manifest.json`` (compact, keys sorted, like serde_json's writer)."""
    return json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def read_manifest(folder: Path) -> dict:
    """The folder's manifest; :class:`ManifestError` if missing, not JSON or of another format."""
    path = Path(folder) / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ManifestError(f"{path}: missing") from None
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path}: unreadable: {exc}") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ManifestError(f"{path}: not a {MANIFEST_FORMAT} manifest")
    if not isinstance(manifest.get(KIND_FIELD, ""), str):
        raise ManifestError(f"{path}: {KIND_FIELD}: expected a string")
    for name, entry in files.items():
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("size"), int)
            and isinstance(entry.get("sha256"), str)
        ):
            raise ManifestError(f"{path}: bad entry for {name!r}")
    return manifest


def with_kind(manifest: dict, kind: str) -> dict:
    """``manifest`` recording that a command of ``kind`` wrote its folder."""
    return {**manifest, KIND_FIELD: kind}


def manifest_kind(folder: Path, manifest: dict) -> str | None:
    """Which kind of command wrote ``folder`` (whose manifest is ``manifest``): the recorded
    ``kind``, or for a manifest from before the field, the kind its files show; None when
    nothing tells."""
    recorded = manifest.get(KIND_FIELD)
    if recorded is not None:
        return recorded
    listed = manifest["files"]
    if any(name.startswith(EPOCH_PREFIX) for name in listed):
        return SAMPLED_KIND
    if EXPORT_DESCRIPTION in listed:
        try:
            export_format = json.loads((Path(folder) / EXPORT_DESCRIPTION).read_bytes())["format"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if isinstance(export_format, str) and export_format.startswith("hrm-data-"):
            return export_format.removeprefix("hrm-data-").split("/")[0]
        return None
    if (Path(folder) / _core.OWNER_MARKER).is_file():
        return TOKENIZED_KIND
    return None


def kind_problem(folder: Path, kind: str, command: str) -> str | None:
    """Why ``command`` (which writes ``kind`` folders) must not replace ``folder``: it holds a
    manifest of another kind, or of none it can tell. None when ``folder`` has no readable
    manifest (what else it holds is the caller's to judge) or one of this kind."""
    try:
        manifest = read_manifest(folder)
    except ManifestError:
        return None
    found = manifest_kind(folder, manifest)
    if found == kind:
        return None
    what = f"a {found} output" if found is not None else "an output of unknown kind"
    return (
        f"{folder}: holds {what} (its {MANIFEST_FILE}), not a {kind} one; {command} replaces "
        f"only its own outputs: choose another folder, or remove that one yourself"
    )


def sizes_match(folder: Path) -> bool:
    """Cheap completeness test: a readable manifest whose files all exist with their sizes."""
    folder = Path(folder)
    try:
        files = read_manifest(folder)["files"]
    except ManifestError:
        return False
    for name, entry in files.items():
        try:
            if (folder / name).stat().st_size != entry["size"]:
                return False
        except OSError:
            return False
    return True


class FileScan(NamedTuple):
    """One read of a file by the Rust core (``_core.scan_arrays``): its size and SHA-256 and,
    when it is a plain 1-D integer ``.npy`` holding all the data its header announces, the
    element type as the header spells it (``<u4``), its length and its largest value (None
    when empty); those three are None for any other file."""

    size: int
    sha256: str
    descr: str | None
    length: int | None
    max_value: int | None


def scan_files(paths: Sequence[str | os.PathLike[str]]) -> list[FileScan | OSError]:
    """Each file of ``paths`` read once, in parallel without the GIL: its :class:`FileScan`,
    or in its slot the ``OSError`` (naming it) its read raised."""
    return [
        scan if isinstance(scan, OSError) else FileScan(*scan)
        for scan in _core.scan_arrays([os.fspath(path) for path in paths])
    ]


@dataclass
class VerifyReport:
    """What :func:`verify_folders` found. ``problems`` is empty when the folder is intact.
    ``scans``: each listed file found, by relative name, as it was read to be hashed (the
    tokenized checks take their arrays' figures from it rather than read them again)."""

    folder: Path
    files: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)
    scans: dict[str, FileScan] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_folder(folder: Path) -> VerifyReport:
    """:func:`verify_folders` of one folder."""
    return verify_folders([folder])[0]


def verify_folders(folders: Sequence[Path]) -> list[VerifyReport]:
    """Recompute the manifest of each folder and compare; one report per folder, in order.

    Problems: no or unreadable manifest, a listed file missing, of another size or another
    SHA-256, an array present but not listed (a stale ``epoch_N``, a stray file), and a sampled
    folder (one with ``epoch_N`` arrays) whose manifest does not list its ``metadata.json``
    (written by an older hrm-sample: nothing would notice it deleted or edited). Each message
    names the file. The listed files of all the folders are hashed in one call of the Rust core
    (:func:`scan_files`); a listed file that exists but cannot be read is a problem of its folder.
    A sampled folder's data card is checked against its manifest by the sampling stage
    (:func:`hrm_assets.sampling.datacard.verification.verify_sampled_folders`).
    """
    reports = [VerifyReport(folder=Path(folder)) for folder in folders]
    listings: list[dict | None] = []
    for report in reports:
        listed = None
        if not report.folder.is_dir():
            report.problems.append(f"{report.folder}: not a directory")
        else:
            try:
                listed = read_manifest(report.folder)["files"]
            except ManifestError as exc:
                report.problems.append(str(exc))
        listings.append(listed)
    paths = [
        os.path.join(report.folder, name)
        for report, listed in zip(reports, listings, strict=True)
        if listed is not None
        for name in sorted(listed)
    ]
    scans = iter(scan_files(paths))
    for report, listed in zip(reports, listings, strict=True):
        if listed is not None:
            found = {name: next(scans) for name in sorted(listed)}
            _compare_listed(report, listed, found)
    return reports


def _compare_listed(
    report: VerifyReport, listed: dict, found: dict[str, FileScan | OSError]
) -> None:
    """The problems of one folder whose manifest lists ``listed``, its files read as ``found``
    (in the sorted order of their names)."""
    folder = report.folder
    for name, scan in found.items():
        expected = listed[name]
        if isinstance(scan, FileNotFoundError):
            report.problems.append(f"{folder / name}: listed in {MANIFEST_FILE} but missing")
            continue
        if isinstance(scan, OSError):
            # Its own problem, not the batch's: the other folders are still judged.
            reason = scan.strerror or str(scan)
            report.problems.append(
                f"{folder / name}: listed in {MANIFEST_FILE} but unreadable: {reason}"
            )
            continue
        report.scans[name] = scan
        report.files += 1
        report.bytes += scan.size
        if scan.size != expected["size"]:
            report.problems.append(
                f"{folder / name}: {scan.size} bytes, {MANIFEST_FILE} records {expected['size']}"
            )
        elif scan.sha256 != expected["sha256"]:
            report.problems.append(
                f"{folder / name}: SHA-256 {scan.sha256} differs from {MANIFEST_FILE} "
                f"({expected['sha256']})"
            )
    arrays = array_files(folder)
    for name in arrays:
        if name not in listed:
            report.problems.append(f"{folder / name}: not listed in {MANIFEST_FILE}")
    sampled = any(name.startswith(EPOCH_PREFIX) for name in [*listed, *arrays])
    if sampled and SAMPLED_METADATA_FILE not in listed:
        report.problems.append(
            f"{folder / SAMPLED_METADATA_FILE}: HRM-Text reads it but {MANIFEST_FILE} does not "
            f"list it (made by an older hrm-sample: sample again)"
        )
