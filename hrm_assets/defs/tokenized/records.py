"""Per-partition records of a batched tokenization run.

Dagster 1.13 gives every partition of a multi-partition run the one data version of the step's
output (dagster-io/dagster issues 18649 and 34013), which would make each file's version a lie.
So the tokenized assets yield no output: they record each partition themselves, an
``AssetMaterialization`` with that file's own data version (and the provenance tags Dagster
would have written) followed by its check evaluations. docs/DAGSTER.md explains the choice.

A partition is recorded when its data version differs from the one Dagster last recorded for
it (a new or changed file, a new tokenizer, or a folder written outside Dagster). An unchanged
partition's latest record already states its version, rows and checks, so a no-op rebuild of
thousands of files writes no per-file events: only its failing checks are recorded.

What needs Dagster's internals (its tags, planned events, the storage's grouped commits and
bulk reads) is in ``hrm_assets.dagster_internals.partition_records``; this module builds the
records of a tokenized file from it.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from hrm_assets.common.storage import ObjectRoot
from hrm_assets.dagster_internals.partition_records import (
    DATA_VERSION_TAG,
    MaterializationTarget,
    grouped_records,
    latest_materialization_targets,
    mark_failed,
    recorded_data_versions,
    targets_from_records,
    version_tags,
)
from hrm_assets.defs.eval.partition_metadata import contamination_metadata
from hrm_assets.tokenization.tokenize import TokenizeOutcome

__all__ = [
    "grouped_records",
    "latest_materialization_targets",
    "mark_failed",
    "materialization",
    "partition_evaluation",
    "recorded_data_versions",
    "targets_from_records",
    "version_tags",
]


def materialization(
    asset_key: dg.AssetKey,
    outcome: TokenizeOutcome,
    tags: dict[str, str],
    folder: Path | ObjectRoot,
    sidecars: Path,
) -> dg.AssetMaterialization:
    """The record of one tokenized file, with its own data version, its ``folder`` (on disk,
    or its ``s3://`` URL), and what the contamination sidecars in ``sidecars`` (its folder, or
    their copy) say."""
    return dg.AssetMaterialization(
        asset_key=asset_key,
        partition=outcome.safe_name,
        metadata={
            "path": dg.MetadataValue.path(str(folder)),
            "dagster/row_count": outcome.rows,
            "tokens": outcome.tokens,
            "source_bytes": outcome.bytes,
            "skipped": outcome.skipped,
            # Parquet nulls read as empty strings, as data_io reads them.
            "nulls": outcome.nulls,
            "tokens_per_row": round(outcome.tokens / outcome.rows, 1) if outcome.rows else 0.0,
            **contamination_metadata(sidecars),
        },
        tags={**tags, DATA_VERSION_TAG: outcome.data_version},
    )


def partition_evaluation(
    result: dg.AssetCheckResult,
    asset_key: dg.AssetKey,
    partition: str,
    target: MaterializationTarget | None,
) -> dg.AssetCheckEvaluation:
    """A check result as the evaluation of one partition (``AssetCheckResult`` can only name
    the run's partition, and a batched run has many)."""
    return dg.AssetCheckEvaluation(
        asset_key=asset_key,
        check_name=result.check_name,
        passed=result.passed,
        metadata=result.metadata,
        target_materialization_data=target,
        blocking=True,
        partition=partition,
    )
