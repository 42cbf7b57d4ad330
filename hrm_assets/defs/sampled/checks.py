"""Blocking checks per training node: the sampled folder is still there and consistent, and
every array still has the size and SHA-256 its ``manifest.json`` records."""

import dagster as dg

from hrm_assets.defs.common.executor import CELERY_QUEUE_TAG
from hrm_assets.defs.common.keys import sampled_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.checks import manifest_check_result
from hrm_assets.manifest import verify_folder
from hrm_assets.training_nodes import TrainingNode, load_training_nodes
from hrm_assets.validation import check_sampled_folder


def _recorded_epochs(instance: dg.DagsterInstance, key: dg.AssetKey) -> int | None:
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return None
    value = event.asset_materialization.metadata.get("epochs")
    return int(value.value) if value is not None else None


def build_sampled_check(node: TrainingNode) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=sampled_key(node.name),
        name="epochs_consistent",
        blocking=True,
        op_tags={CELERY_QUEUE_TAG: node.queue_name()},  # reads that node's local output
        description="Folder present (RAM disks are wiped on reboot), epoch count as materialized, "
        "every span inside tokens.npy, dtype fits the vocab.",
    )
    def epochs_consistent(
        context: dg.AssetCheckExecutionContext, data_paths: DataPaths
    ) -> dg.AssetCheckResult:
        epochs = _recorded_epochs(context.instance, sampled_key(node.name))
        report = check_sampled_folder(node.output_dir(data_paths.root), epochs)
        return dg.AssetCheckResult(
            passed=report.passed,
            metadata={**report.figures, "problems": dg.MetadataValue.json(report.problems)},
        )

    return epochs_consistent


def build_sampled_manifest_check(node: TrainingNode) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=sampled_key(node.name),
        name="manifest_valid",
        blocking=True,
        op_tags={CELERY_QUEUE_TAG: node.queue_name()},
        description="tokens.npy and every epoch's arrays have the size and SHA-256 recorded in "
        "manifest.json, and no array is unlisted (the function behind hrm-verify).",
    )
    def manifest_valid(data_paths: DataPaths) -> dg.AssetCheckResult:
        return manifest_check_result(verify_folder(node.output_dir(data_paths.root)))

    return manifest_valid


SAMPLED_CHECKS = [
    check
    for node in load_training_nodes()
    for check in (build_sampled_check(node), build_sampled_manifest_check(node))
]
