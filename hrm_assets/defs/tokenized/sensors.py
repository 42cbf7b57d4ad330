"""Registers cleaned files written outside a Dagster run as tokenized partitions."""

import dagster as dg

from hrm_assets.cleaning.source_files import scan_cleaned_root
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.data_root import DataRoot
from hrm_assets.defs.cleaned.adopted import plan_adoption
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partitions import (
    TOKENIZED_PARTITIONS,
    partition_requests,
    remove_owned_output_at,
)
from hrm_assets.tokenization.partitioning import files_by_source


@dg.sensor(
    name="cleaned_files_sensor",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a tokenized partition for every new cleaned file and removes the "
    "partitions of files that disappeared.",
)
def cleaned_files_sensor(
    context: dg.SensorEvaluationContext, data_paths: DataPaths
) -> dg.SensorResult:
    if data_paths.adopted_cleaned_roots:
        return adopted_tick(context, data_paths)
    cleaned_root = data_paths.cleaned_root
    scan = scan_cleaned_root(DataRoot(data_paths.cleaned_location))
    scanned = scan.files
    by_source = files_by_source(SOURCES.values(), scanned)
    requests = []
    changes = []
    for name, spec in SOURCES.items():
        added, removed = partition_requests(context.instance, spec, cleaned_root, by_source[name])
        requests.extend(partition_changes(name, added, removed, data_paths))
        if added or removed:
            changes.append(f"{name}: +{len(added)} -{len(removed)}")
    context.log.info("; ".join(changes) if changes else f"{len(scanned)} cleaned files, no change")
    if scan.symlinks:
        names = ", ".join(str(path.relative_to(cleaned_root)) for path in scan.symlinks[:5])
        context.log.warning(
            f"{len(scan.symlinks)} link(s) in the cleaned tree skipped "
            "(files, folders or dangling), as data_io skips them: "
            f"{names}{', ...' if len(scan.symlinks) > 5 else ''}"
        )
    return dg.SensorResult(dynamic_partitions_requests=requests)


def adopted_tick(context: dg.SensorEvaluationContext, data_paths: DataPaths) -> dg.SensorResult:
    """With adopted cleaned roots: record each source whose files changed (its content version,
    no run) and an adopted tokenizer, and keep one tokenized partition per file; automation
    tokenizes from there."""
    plan = plan_adoption(context.instance, data_paths)
    requests = []
    for name, (added, removed) in plan.partitions.items():
        requests.extend(partition_changes(name, added, removed, data_paths))
    context.log.info(plan.summary())
    for warning in plan.warnings():
        context.log.warning(warning)
    return dg.SensorResult(asset_events=plan.events, dynamic_partitions_requests=requests)


def partition_changes(
    source: str, added: list[str], removed: list[str], data_paths: DataPaths
) -> list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest]:
    """The requests that add and delete ``source``'s tokenized partitions; the folders of the
    deleted ones (those we wrote) are removed with them."""
    partitions_def = TOKENIZED_PARTITIONS[source]
    requests = []
    if added:
        requests.append(partitions_def.build_add_request(added))
    if removed:
        requests.append(partitions_def.build_delete_request(removed))
        for key in removed:
            remove_owned_output_at(data_paths.tokenized_location, key)
    return requests
