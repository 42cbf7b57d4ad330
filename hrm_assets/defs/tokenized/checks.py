"""Blocking checks per tokenized partition: arrays are consistent with each other and the vocab,
and every array still has the size and SHA-256 its ``manifest.json`` records.

They are check specs of the tokenized asset, evaluated in its own step right after each folder
is written or reused (a batched run is one step whatever its number of files), so a skipped
partition is still verified; ``records.py`` decides which evaluations are recorded.
"""

import warnings
from collections.abc import Sequence
from pathlib import Path

import dagster as dg

from hrm_assets.checks.consistency import CheckReport, check_tokenized_folders
from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.manifest import VerifyReport, verify_folders
from hrm_assets.defs.common.keys import tokenized_key
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.tokenization.build import recorded_vocab_size

ARRAYS_CONSISTENT = "arrays_consistent"
MANIFEST_VALID = "manifest_valid"


_DESCRIPTIONS = {
    ARRAYS_CONSISTENT: "Spans inside tokens.npy, ids below the vocab size, row counts as recorded.",
    MANIFEST_VALID: "Every array has the size and SHA-256 recorded in manifest.json (the "
    "function behind hrm-verify).",
}


def tokenized_check_specs(spec: SourceSpec) -> list[dg.AssetCheckSpec]:
    with warnings.catch_warnings():
        # Partitioned asset checks are a Dagster preview; a per-file check is what we need.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return [
            dg.AssetCheckSpec(
                name,
                asset=tokenized_key(spec.name),
                blocking=True,
                partitions_def=TOKENIZED_PARTITIONS[spec.name],
                description=description,
            )
            for name, description in _DESCRIPTIONS.items()
        ]


def arrays_consistent_result(report: CheckReport) -> dg.AssetCheckResult:
    """The check result of a :func:`check_tokenized_folders` report."""
    return dg.AssetCheckResult(
        check_name=ARRAYS_CONSISTENT,
        passed=report.passed,
        metadata={**report.figures, "problems": dg.MetadataValue.json(report.problems)},
    )


def manifest_check_result(
    report: VerifyReport, check_name: str = MANIFEST_VALID
) -> dg.AssetCheckResult:
    """The check result of a :func:`verify_folders` report (shared by tokenized and sampled)."""
    return dg.AssetCheckResult(
        check_name=check_name,
        passed=report.ok,
        metadata={
            "path": dg.MetadataValue.path(str(report.folder)),
            "arrays": report.files,
            "bytes": report.bytes,
            "problems": dg.MetadataValue.json(report.problems),
        },
    )


def tokenized_check_results(
    tokenized_root: Path, folder: Path, vocab_size: int | None = None
) -> list[dg.AssetCheckResult]:
    """Both checks of one tokenized folder (``vocab_size`` read from the root if not given)."""
    return tokenized_check_results_many(tokenized_root, [folder], vocab_size)[0]


def tokenized_check_results_many(
    tokenized_root: Path, folders: Sequence[Path], vocab_size: int | None = None
) -> list[list[dg.AssetCheckResult]]:
    """Both checks of each tokenized folder, in order. Every array is read once, by the Rust
    core, for both: the manifest check hashes the listed files of all the folders in one call,
    and the array check takes its figures from those reads (:func:`verify_folders`,
    :func:`check_tokenized_folders`)."""
    if vocab_size is None:
        vocab_size = recorded_vocab_size(tokenized_root)
    manifests = verify_folders(folders)
    arrays = check_tokenized_folders(folders, vocab_size, [report.scans for report in manifests])
    return [
        [arrays_consistent_result(array_report), manifest_check_result(manifest_report)]
        for array_report, manifest_report in zip(arrays, manifests, strict=True)
    ]


def reused_remote_check_results(folder: object) -> list[dg.AssetCheckResult]:
    """The checks of a folder in object storage reused without reading it: it was checked when
    written (from the staged copy the upload was made of), and its manifest still lists exactly
    the arrays at the sizes the listing shows (what ``complete_manifest`` requires). The arrays
    are not downloaded to be hashed again; ``verified`` says so."""
    metadata = {"path": str(folder), "verified": "manifest and listing (data not re-read)"}
    return [
        dg.AssetCheckResult(check_name=ARRAYS_CONSISTENT, passed=True, metadata=metadata),
        dg.AssetCheckResult(check_name=MANIFEST_VALID, passed=True, metadata=metadata),
    ]
