"""Checks per training node: blocking, the sampled folder is still there and consistent, and
every array still has the size and SHA-256 its ``manifest.json`` records; a warning, evaluated
by the asset itself, when rows truncated to a too-short response were kept."""

import dagster as dg

from hrm_assets.checks.consistency import check_sampled_folder
from hrm_assets.defs.common.executor import CELERY_QUEUE_TAG
from hrm_assets.defs.common.keys import sampled_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.checks import manifest_check_result
from hrm_assets.sampling.datacard.verification import verify_sampled_folder
from hrm_assets.sampling.training_nodes import TrainingNode, load_training_nodes


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
        return manifest_check_result(verify_sampled_folder(node.output_dir(data_paths.root)))

    return manifest_valid


SHORT_RESPONSES = "no_short_truncated_responses"


def short_responses_spec(node: TrainingNode) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        SHORT_RESPONSES,
        asset=sampled_key(node.name),
        description="No row that truncation left shorter than min_resp_length is kept (a "
        "warning: data_io keeps them, HRM-Text's own data preparation drops one-token "
        "responses; drop_short_after_truncate excludes them).",
    )


def short_responses_result(figures: dict, min_resp_length: int) -> dg.AssetCheckResult:
    """The check from a run's summary figures
    (``hrm_assets.sampling.analytics.summary_figures``)."""
    short = int(figures.get("rows_short_after_truncate", 0))
    dropped = int(figures.get("rows_dropped_short_after_truncate", 0))
    return dg.AssetCheckResult(
        check_name=SHORT_RESPONSES,
        passed=short == dropped,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "rows_short_after_truncate": short,
            "rows_dropped_short_after_truncate": dropped,
            "rows_kept_short": short - dropped,
            "min_resp_length": min_resp_length,
        },
    )


SAMPLED_CHECKS = [
    check
    for node in load_training_nodes()
    for check in (build_sampled_check(node), build_sampled_manifest_check(node))
]
