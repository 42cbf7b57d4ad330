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
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.data_version import (
    CODE_VERSION_TAG,
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    DEFAULT_DATA_VERSION,
    get_input_data_version_tag,
    get_input_event_pointer_tag,
)
from dagster._core.events import AssetMaterializationPlannedData, DagsterEvent, DagsterEventType

from hrm_assets.tokenization.tokenize import TokenizeOutcome

_NULL_EVENT_POINTER = "NULL"


def grouped_records(instance: dg.DagsterInstance) -> contextlib.AbstractContextManager:
    """Within: the run's events are committed in groups where the instance's storage can (the
    local SQLite one: ``instance_storage.grouped_commits``); elsewhere one by one as usual."""
    # Looked up, not imported: the storage module is only loaded by instances that use it.
    grouped_commits = getattr(instance.event_log_storage, "grouped_commits", None)
    return grouped_commits() if grouped_commits is not None else contextlib.nullcontext()


def recorded_data_versions(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, partitions: Sequence[str]
) -> dict[str, str]:
    """The data version Dagster last recorded for each of ``partitions`` (one query)."""
    tags = instance.event_log_storage.get_latest_tags_by_partition(
        asset_key,
        DagsterEventType.ASSET_MATERIALIZATION,
        tag_keys=[DATA_VERSION_TAG],
        asset_partitions=list(partitions),
    )
    return {
        key: found[DATA_VERSION_TAG] for key, found in tags.items() if DATA_VERSION_TAG in found
    }


def version_tags(
    instance: dg.DagsterInstance, deps: Iterable[dg.AssetKey], code_version: str
) -> dict[str, str]:
    """The code-version and input-provenance tags of a materialization, as Dagster writes
    them (so the UI's staleness works), for the inputs' latest materializations."""
    tags = {CODE_VERSION_TAG: code_version, DATA_VERSION_IS_USER_PROVIDED_TAG: "true"}
    for key in deps:
        latest = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1)
        record = latest.records[0] if latest.records else None
        version = record.asset_materialization.tags.get(DATA_VERSION_TAG) if record else None
        tags[get_input_data_version_tag(key)] = version or DEFAULT_DATA_VERSION.value
        tags[get_input_event_pointer_tag(key)] = (
            str(record.storage_id) if record else _NULL_EVENT_POINTER
        )
    return tags


def materialization(
    asset_key: dg.AssetKey, outcome: TokenizeOutcome, tags: dict[str, str]
) -> dg.AssetMaterialization:
    """The record of one tokenized file, with its own data version."""
    return dg.AssetMaterialization(
        asset_key=asset_key,
        partition=outcome.safe_name,
        metadata={
            "path": dg.MetadataValue.path(str(outcome.output_dir)),
            "dagster/row_count": outcome.rows,
            "tokens": outcome.tokens,
            "source_bytes": outcome.bytes,
            "skipped": outcome.skipped,
            # Parquet nulls read as empty strings, as data_io reads them.
            "nulls": outcome.nulls,
            "tokens_per_row": round(outcome.tokens / outcome.rows, 1) if outcome.rows else 0.0,
        },
        tags={**tags, DATA_VERSION_TAG: outcome.data_version},
    )


def latest_materialization_targets(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, partitions: Sequence[str]
) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
    """What a check evaluation of each of ``partitions`` refers to: its latest materialization
    (two queries for all of them; partitions never materialized are left out). Read by the
    instance's storage where it can (the local SQLite one, without rebuilding whole events)."""
    read = getattr(instance.event_log_storage, "latest_materialization_targets", None)
    if read is not None:
        return read(asset_key, partitions)
    return targets_from_records(instance, asset_key, partitions)


def targets_from_records(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, partitions: Sequence[str]
) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
    """:func:`latest_materialization_targets` through Dagster's records, on any storage."""
    latest = instance.event_log_storage.get_latest_storage_id_by_partition(
        asset_key, DagsterEventType.ASSET_MATERIALIZATION, partitions=set(partitions)
    )
    if not latest:
        return {}
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, storage_ids=list(latest.values())),
        limit=len(latest),
    ).records
    return {
        record.partition_key: AssetCheckEvaluationTargetMaterializationData(
            storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
        )
        for record in records
        if record.partition_key is not None
    }


def partition_evaluation(
    result: dg.AssetCheckResult,
    asset_key: dg.AssetKey,
    partition: str,
    target: AssetCheckEvaluationTargetMaterializationData | None,
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


def mark_failed(
    context: dg.AssetExecutionContext, asset_key: dg.AssetKey, partitions: Iterable[str]
) -> None:
    """Make Dagster show ``partitions`` as failed when the run fails.

    Dagster marks a failed run's partitions as failed from their per-partition "planned"
    events; an instance that plans a run's partitions as one subset
    (``instance_storage.PooledSqliteStorage``) writes none, so write them for these.
    """
    step_key = context.op_execution_context.get_step_execution_context().step.key
    for partition in partitions:
        planned = DagsterEvent.build_asset_materialization_planned_event(
            context.job_name,
            step_key,
            AssetMaterializationPlannedData(asset_key, partition=partition),
        )
        context.instance.report_dagster_event(planned, run_id=context.run.run_id)
