"""Blocking checks per tokenized partition: arrays are consistent with each other and the vocab,
and every array still has the size and SHA-256 its ``manifest.json`` records."""

import json
import warnings

import dagster as dg

from hrm_assets.defs.common.keys import tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.manifest import VerifyReport, verify_folder
from hrm_assets.sources import SOURCES, SourceSpec
from hrm_assets.tokenize import TOKENIZER_INFO_FILE
from hrm_assets.validation import check_tokenized_folder


def build_tokenized_check(spec: SourceSpec) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=tokenized_key(spec.name),
        name="arrays_consistent",
        blocking=True,
        partitions_def=TOKENIZED_PARTITIONS[spec.name],
        description="Spans inside tokens.npy, ids below the vocab size, row counts as recorded.",
    )
    def arrays_consistent(
        context: dg.AssetCheckExecutionContext, data_paths: DataPaths
    ) -> dg.AssetCheckResult:
        info_path = data_paths.tokenized_root / TOKENIZER_INFO_FILE
        vocab_size = json.loads(info_path.read_text(encoding="utf-8"))["vocab_size"]
        report = check_tokenized_folder(
            data_paths.tokenized_root / context.partition_key, vocab_size
        )
        return dg.AssetCheckResult(
            passed=report.passed,
            metadata={**report.figures, "problems": dg.MetadataValue.json(report.problems)},
        )

    return arrays_consistent


def manifest_check_result(report: VerifyReport) -> dg.AssetCheckResult:
    """The check result of a :func:`verify_folder` report (shared by tokenized and sampled)."""
    return dg.AssetCheckResult(
        passed=report.ok,
        metadata={
            "path": dg.MetadataValue.path(str(report.folder)),
            "arrays": report.files,
            "bytes": report.bytes,
            "problems": dg.MetadataValue.json(report.problems),
        },
    )


def build_tokenized_manifest_check(spec: SourceSpec) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=tokenized_key(spec.name),
        name="manifest_valid",
        blocking=True,
        partitions_def=TOKENIZED_PARTITIONS[spec.name],
        description="Every array has the size and SHA-256 recorded in manifest.json "
        "(the function behind hrm-verify).",
    )
    def manifest_valid(
        context: dg.AssetCheckExecutionContext, data_paths: DataPaths
    ) -> dg.AssetCheckResult:
        return manifest_check_result(
            verify_folder(data_paths.tokenized_root / context.partition_key)
        )

    return manifest_valid


with warnings.catch_warnings():
    # Partitioned asset checks are a Dagster preview; a per-file check is what we need.
    warnings.simplefilter("ignore", dg.PreviewWarning)
    TOKENIZED_CHECKS = [
        check
        for spec in SOURCES.values()
        for check in (build_tokenized_check(spec), build_tokenized_manifest_check(spec))
    ]
