"""Whether a sampled folder's data card still describes the folder (for ``hrm-verify``, the
sampled asset's manifest check and the export's proof of its input).

The card records the manifest's file list and the manifest's own SHA-256, and ``DATACARD.md``
is rendered from ``datacard.json``; so a card copied from another run, edited by hand or left
from a different manifest is found without re-deriving the run's figures. A folder with no
card (sampled before cards existed) has nothing to check here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.manifest import (
    MANIFEST_FILE,
    ManifestError,
    VerifyReport,
    read_manifest,
    verify_folders,
)
from hrm_assets.sampling.datacard.markdown import render_markdown
from hrm_assets.sampling.datacard.writer import DATACARD_JSON, DATACARD_MARKDOWN


def verify_sampled_folder(folder: Path) -> VerifyReport:
    """:func:`~hrm_assets.common.manifest.verify_folder`, and the folder's data card against
    its manifest."""
    return verify_sampled_folders([folder])[0]


def verify_sampled_folders(folders: Sequence[Path]) -> list[VerifyReport]:
    """:func:`~hrm_assets.common.manifest.verify_folders`, and each folder's data card against
    its manifest (a folder without a card, a tokenized one above all, has nothing more; one
    without a readable manifest has that problem alone)."""
    reports = verify_folders(folders)
    for report in reports:
        if report.folder.is_dir() and _has_manifest(report.folder):
            report.problems.extend(data_card_problems(report.folder))
    return reports


def _has_manifest(folder: Path) -> bool:
    try:
        read_manifest(folder)
    except ManifestError:
        return False
    return True


def data_card_problems(folder: Path) -> list[str]:
    """Problems of ``folder``'s data card, each naming the file; empty when it has none or it
    matches the folder's manifest (whose own check is
    :func:`hrm_assets.common.manifest.verify_folder`)."""
    folder = Path(folder)
    card_path, markdown_path = folder / DATACARD_JSON, folder / DATACARD_MARKDOWN
    if not card_path.exists() and not markdown_path.exists():
        return []
    if not card_path.is_file():
        return [f"{card_path}: missing beside {DATACARD_MARKDOWN}"]
    try:
        card = json.loads(card_path.read_bytes())
        outputs = card["outputs"]
        listed, recorded_sha256 = outputs["files"], outputs["manifest_sha256"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{card_path}: not a data card: {exc!r}"]
    problems = []
    try:
        if listed != read_manifest(folder)["files"]:
            problems.append(
                f"{card_path}: its files and SHA-256 are not those {MANIFEST_FILE} lists "
                f"(the card of another run)"
            )
        elif recorded_sha256 != file_sha256(folder / MANIFEST_FILE):
            problems.append(f"{card_path}: records another {MANIFEST_FILE} (SHA-256 differs)")
    except ManifestError:
        pass  # verify_folder reports the manifest itself
    try:
        rendered = render_markdown(card)
    except (KeyError, TypeError, ValueError) as exc:
        return [*problems, f"{card_path}: not a data card: {exc!r}"]
    try:
        if markdown_path.read_text(encoding="utf-8") != rendered:
            problems.append(f"{markdown_path}: differs from what {DATACARD_JSON} renders")
    except FileNotFoundError:
        problems.append(f"{markdown_path}: missing beside {DATACARD_JSON}")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{markdown_path}: unreadable: {exc}")
    return problems
