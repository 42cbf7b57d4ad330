"""Blocking check per training node: the sampled folder is still there and consistent."""

import dagster as dg

from hrm_assets.defs.common.keys import sampled_key
from hrm_assets.defs.common.resources import DataPaths
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


SAMPLED_CHECKS = [build_sampled_check(node) for node in load_training_nodes()]
