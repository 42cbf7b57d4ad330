"""Blocking check: every cleaned row is three strings with known tags.

``rows_valid`` is a check spec of the cleaned asset, evaluated in the asset's own step right
after its files are written or kept: a source is then one step, not two (each step is a process
under the multiprocess executor), and a skipped rebuild is still checked.
"""

import dagster as dg

from hrm_assets.checks.consistency import check_cleaned_files
from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.layout import CleanedFile
from hrm_assets.defs.common.keys import cleaned_key

ROWS_VALID = "rows_valid"


def rows_valid_spec(spec: SourceSpec) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        ROWS_VALID,
        asset=cleaned_key(spec.name),
        blocking=True,
        description="Schema, known condition tags; empty responses are counted.",
    )


def rows_valid_result(files: list[CleanedFile]) -> dg.AssetCheckResult:
    """The check over the source's cleaned files (each row read and validated)."""
    return rows_valid_from_summary(rows_valid_summary(files))


def rows_valid_summary(files: list[CleanedFile]) -> dict:
    """The check's outcome as plain JSON (kept in a remote root's build record, so that an
    unchanged source on object storage is not downloaded to be checked again)."""
    report = check_cleaned_files([item.path for item in files])
    return {"passed": report.passed, "figures": report.figures, "problems": report.problems}


def rows_valid_from_summary(summary: dict) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name=ROWS_VALID,
        passed=bool(summary["passed"]),
        metadata={**summary["figures"], "problems": dg.MetadataValue.json(summary["problems"])},
    )
