"""Blocking check: every cleaned row is three strings with known tags."""

import dagster as dg

from hrm_assets.defs.common.keys import cleaned_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.partitioning import files_of_source
from hrm_assets.sources import SOURCES, SourceSpec
from hrm_assets.validation import check_cleaned_files


def build_cleaned_check(spec: SourceSpec) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=cleaned_key(spec.name),
        name="rows_valid",
        blocking=True,
        description="Schema, known condition tags; empty responses are counted.",
    )
    def rows_valid(data_paths: DataPaths) -> dg.AssetCheckResult:
        paths = [item.path for item in files_of_source(spec, data_paths.cleaned_root)]
        report = check_cleaned_files(paths)
        return dg.AssetCheckResult(
            passed=report.passed,
            metadata={**report.figures, "problems": dg.MetadataValue.json(report.problems)},
        )

    return rows_valid


CLEANED_CHECKS = [build_cleaned_check(spec) for spec in SOURCES.values()]
