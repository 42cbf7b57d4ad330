"""``manifest.json``: the size and SHA-256 of every array of an output folder.

Tokenized folders get theirs from the Rust writer (``rust_tokenizer/src/output.rs``), sampled
folders from the sampler, which hashes each array as it writes it (``hrm_assets.sampling.arrays``);
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

:func:`verify_folder` recomputes a manifest; ``hrm-verify`` and the ``manifest_valid`` asset
checks call it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hrm_assets import _core
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import is_hidden
from hrm_assets.common.settings import METADATA_FILE

MANIFEST_FILE: str = _core.MANIFEST_FILE
MANIFEST_FORMAT: str = _core.MANIFEST_FORMAT
ARRAY_SUFFIX = ".npy"
# What HRM-Text reads from a sampled folder besides the arrays, so what its manifest must list.
SAMPLED_METADATA_FILE = METADATA_FILE  # HRM-Text reads it beside the epochs
EPOCH_PREFIX = "epoch_"


class ManifestError(ValueError):
    """A manifest is missing or unreadable; the message names the file."""


def array_files(folder: Path) -> list[str]:
    """Relative POSIX paths of the ``.npy`` files under ``folder`` (hidden entries skipped)."""
    folder = Path(folder)
    found = []
    for path in folder.rglob(f"*{ARRAY_SUFFIX}"):
        relative = path.relative_to(folder)
        if path.is_file() and not is_hidden(relative):
            found.append(relative.as_posix())
    return sorted(found)


def file_entry(path: Path) -> dict[str, int | str]:
    """``{"sha256": hex, "size": bytes}`` of one file."""
    return {"sha256": file_sha256(path), "size": Path(path).stat().st_size}


def build_manifest(folder: Path, files: list[str] | None = None) -> dict:
    """The manifest of ``folder``'s arrays (or of ``files``, relative paths), as a dict."""
    folder = Path(folder)
    names = array_files(folder) if files is None else sorted(files)
    return {"files": {name: file_entry(folder / name) for name in names}, "format": MANIFEST_FORMAT}


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
    for name, entry in files.items():
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("size"), int)
            and isinstance(entry.get("sha256"), str)
        ):
            raise ManifestError(f"{path}: bad entry for {name!r}")
    return manifest


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


@dataclass
class VerifyReport:
    """What :func:`verify_folder` found. ``problems`` is empty when the folder is intact."""

    folder: Path
    files: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_folder(folder: Path) -> VerifyReport:
    """Recompute the manifest of ``folder`` and compare.

    Problems: no or unreadable manifest, a listed file missing, of another size or another
    SHA-256, an array present but not listed (a stale ``epoch_N``, a stray file), and a sampled
    folder (one with ``epoch_N`` arrays) whose manifest does not list its ``metadata.json``
    (written by an older hrm-sample: nothing would notice it deleted or edited), and a data
    card (``hrm_assets.sampling.datacard``) that does not describe this manifest. Each message names
    the file.
    """
    folder = Path(folder)
    report = VerifyReport(folder=folder)
    if not folder.is_dir():
        report.problems.append(f"{folder}: not a directory")
        return report
    try:
        listed = read_manifest(folder)["files"]
    except ManifestError as exc:
        report.problems.append(str(exc))
        return report
    for name in sorted(listed):
        expected = listed[name]
        path = folder / name
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            report.problems.append(f"{path}: listed in {MANIFEST_FILE} but missing")
            continue
        report.files += 1
        report.bytes += size
        if size != expected["size"]:
            report.problems.append(
                f"{path}: {size} bytes, {MANIFEST_FILE} records {expected['size']}"
            )
            continue
        digest = file_sha256(path)
        if digest != expected["sha256"]:
            report.problems.append(
                f"{path}: SHA-256 {digest} differs from {MANIFEST_FILE} ({expected['sha256']})"
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
    # The sampler's data card must describe this manifest (imported here: it imports us).
    from hrm_assets.sampling.datacard.verification import data_card_problems

    report.problems.extend(data_card_problems(folder))
    return report
