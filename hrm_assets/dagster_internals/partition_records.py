"""What a batched run needs of Dagster's internals to record each partition itself.

Dagster's own tags of a materialization (data version, code version, each input's data version
and event pointer: what the UI's staleness reads), the check-evaluation target, the per-partition
"planned" events Dagster marks failed partitions from, and the project storage's extras
(:class:`~hrm_assets.dagster_internals.interface.BatchedRecordStorage`) where the instance has
them. Used on every Dagster release: a batched run cannot record a partition's own data version
without these names.
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

from hrm_assets.dagster_internals.interface import BatchedRecordStorage

MaterializationTarget = AssetCheckEvaluationTargetMaterializationData
"""What a check evaluation names as the materialization it judges."""

__all__ = [
    "DATA_VERSION_TAG",
    "MaterializationTarget",
    "grouped_records",
    "latest_materialization_targets",
    "mark_failed",
    "recorded_data_versions",
    "targets_from_records",
    "version_tags",
]

_NULL_EVENT_POINTER = "NULL"


def grouped_records(instance: dg.DagsterInstance) -> contextlib.AbstractContextManager:
    """Within: the run's events are committed in groups where the instance's storage can (the
    project's SQLite storage); elsewhere one by one as usual."""
    storage = instance.event_log_storage
    if isinstance(storage, BatchedRecordStorage):
        return storage.grouped_commits()
    return contextlib.nullcontext()


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


def latest_materialization_targets(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, partitions: Sequence[str]
) -> dict[str, MaterializationTarget]:
    """What a check evaluation of each of ``partitions`` refers to: its latest materialization
    (two queries for all of them; partitions never materialized are left out). Read by the
    instance's storage where it can (the project's SQLite one, without rebuilding whole
    events)."""
    storage = instance.event_log_storage
    if isinstance(storage, BatchedRecordStorage):
        return storage.latest_materialization_targets(asset_key, partitions)
    return targets_from_records(instance, asset_key, partitions)


def targets_from_records(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, partitions: Sequence[str]
) -> dict[str, MaterializationTarget]:
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
        record.partition_key: MaterializationTarget(
            storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
        )
        for record in records
        if record.partition_key is not None
    }


def mark_failed(
    context: dg.AssetExecutionContext, asset_key: dg.AssetKey, partitions: Iterable[str]
) -> None:
    """Make Dagster show ``partitions`` as failed when the run fails.

    Dagster marks a failed run's partitions as failed from their per-partition "planned"
    events; an instance that plans a run's partitions as one subset (the project's SQLite
    storage) writes none, so write them for these.
    """
    step_key = context.op_execution_context.get_step_execution_context().step.key
    for partition in partitions:
        planned = DagsterEvent.build_asset_materialization_planned_event(
            context.job_name,
            step_key,
            AssetMaterializationPlannedData(asset_key, partition=partition),
        )
        context.instance.report_dagster_event(planned, run_id=context.run.run_id)
