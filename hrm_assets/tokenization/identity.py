"""Whose data a tokenized folder holds: its ``metadata.json`` against its name and its arrays.

A tokenized folder is ``<root>/<safe name of its cleaned file>/``; its ``metadata.json``
records that file (``source_path``, relative to the cleaned root) and the ``rows`` and
``tokens`` the encoder wrote. The manifest proves the arrays are the bytes written, not whose
they are: two folders swapped, or another file's arrays under this file's ``metadata.json``,
pass a manifest check. The identity rule closes that gap:

- ``source_path``'s safe name is the folder's name;
- ``rows`` is the length of every span array and ``tokens`` the length of ``tokens.npy``.

``hrm-verify``, the incremental skip of ``hrm-tokenize``, the tokenized asset checks, the
sampler and the exports of a tokenized root all apply it, through
:func:`identity_problems` (lengths given, as a scan read them) or :func:`folder_identity_problems`
(lengths read from the ``.npy`` headers). It applies to folders hrm-data wrote (the ``.hrm-data``
marker); data_io's folders record no ``source_path`` and are not judged by it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from hrm_assets import _core
from hrm_assets.common.layout import safe_name
from hrm_assets.common.manifest import MANIFEST_FILE, VerifyReport, verify_folders
from hrm_assets.common.settings import METADATA_FILE, TOKENS_FILE
from hrm_assets.contracts.spans import SPAN_FILES

OWNER_MARKER: str = _core.OWNER_MARKER


def is_hrm_tokenized(folder: Path) -> bool:
    """Whether ``folder`` is a tokenized folder hrm-data wrote (and so may replace or prune): a
    plain folder (not a symlink to one) holding the ownership marker."""
    folder = Path(folder)
    return not folder.is_symlink() and (folder / OWNER_MARKER).is_file()


def read_folder_metadata(folder: Path) -> tuple[dict | None, str | None]:
    """``(metadata, None)``, or ``(None, problem)`` naming the file when it is missing, not
    JSON or not an object."""
    path = Path(folder) / METADATA_FILE
    try:
        value = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None, f"{path}: missing"
    except (OSError, ValueError) as exc:
        return None, f"{path}: unreadable: {exc}"
    if not isinstance(value, dict):
        return None, f"{path}: not a JSON object"
    return value, None


def identity_problems(
    folder: Path, metadata: Mapping[str, object], lengths: Mapping[str, int | None]
) -> list[str]:
    """The problems of ``folder``'s identity: ``metadata`` (its ``metadata.json``) against the
    folder's name and ``lengths`` (element counts of its arrays by file name; a missing or
    ``None`` entry is not judged). Each message names the file and the field."""
    folder = Path(folder)
    path = folder / METADATA_FILE
    problems = []
    source = metadata.get("source_path")
    if not isinstance(source, str) or not source:
        problems.append(f"{path}: source_path: missing (every folder hrm-tokenize writes has one)")
    elif safe_name(source) != folder.name:
        problems.append(
            f"{path}: source_path: {source!r} is the cleaned file of folder {safe_name(source)!r}, "
            f"not of {folder.name!r} (folders moved or swapped: tokenize again)"
        )
    for field_name, files in (("tokens", (TOKENS_FILE,)), ("rows", SPAN_FILES)):
        recorded = metadata.get(field_name)
        for file in files:
            length = lengths.get(file)
            if length is None:
                continue
            if not isinstance(recorded, int) or isinstance(recorded, bool):
                problems.append(f"{path}: {field_name}: expected an integer, got {recorded!r}")
                break
            if recorded != length:
                problems.append(
                    f"{path}: {field_name}: records {recorded:,} but {folder / file} holds "
                    f"{length:,} (another file's arrays: tokenize again)"
                )
                break
    return problems


def folder_identity_problems(
    folder: Path, metadata: Mapping[str, object] | None = None
) -> list[str]:
    """:func:`identity_problems` with the lengths read from the arrays' ``.npy`` headers (a
    few bytes each); ``metadata`` is read when not given. An unreadable array is a problem."""
    from hrm_assets.common.npy_files import NpyFileError, npy_layout

    folder = Path(folder)
    if metadata is None:
        metadata, problem = read_folder_metadata(folder)
        if metadata is None:
            return [problem]
    lengths: dict[str, int | None] = {}
    problems = []
    for file in (TOKENS_FILE, *SPAN_FILES):
        try:
            lengths[file] = npy_layout(folder / file).length
        except (NpyFileError, OSError) as exc:
            problems.append(f"{folder / file}: unreadable: {exc}")
    return problems + identity_problems(folder, metadata, lengths)


def tokenized_input_problems(folders: list[Path]) -> list[str]:
    """What a consumer (the sampler, an export of a tokenized root) must refuse in the
    tokenized folders it is about to read: for each folder hrm-data wrote, or that carries a
    manifest, its manifest recomputed (``hrm_assets.common.manifest.verify_folders``, every
    file hashed in one parallel call) and, for hrm-data's, its identity. data_io's folders
    (no manifest, no marker) have nothing to check against and pass. Each problem names the
    file."""
    checked = [
        Path(folder)
        for folder in folders
        if is_hrm_tokenized(folder) or (Path(folder) / MANIFEST_FILE).is_file()
    ]
    problems = []
    for report in verify_folders(checked):
        problems.extend(report.problems)
        if report.ok and is_hrm_tokenized(report.folder):
            problems.extend(scanned_identity_problems(report))
    return problems


def scanned_identity_problems(report: VerifyReport) -> list[str]:
    """:func:`identity_problems` of a folder whose manifest check (``report``) read its
    arrays: their lengths are taken from that read."""
    metadata, problem = read_folder_metadata(report.folder)
    if metadata is None:
        return [problem]
    lengths = {name: scan.length for name, scan in report.scans.items()}
    return identity_problems(report.folder, metadata, lengths)


def refusal(problems: list[str], what: str) -> str:
    """One message for a consumer refusing its input: the first problems, and how many more."""
    shown = "; ".join(problems[:3])
    more = f" (and {len(problems) - 3} more problems)" if len(problems) > 3 else ""
    return f"{shown}{more}; {what}"
