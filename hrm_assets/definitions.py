"""The Definitions of hrm-data: every domain under ``defs/``, one resource, one executor."""

import dagster as dg

from hrm_assets.defs.cleaned.assets import CLEANED_ASSETS
from hrm_assets.defs.cleaned.jobs import clean_job
from hrm_assets.defs.common.automation import AUTOMATION_SENSOR
from hrm_assets.defs.common.executor import executor_from_environment
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.export.assets import EXPORT_ASSETS
from hrm_assets.defs.raw.assets import RAW_ASSETS
from hrm_assets.defs.raw.jobs import observe_raw_job
from hrm_assets.defs.raw.schedules import rebuild_schedule
from hrm_assets.defs.sampled.assets import SAMPLED_ASSETS
from hrm_assets.defs.sampled.checks import SAMPLED_CHECKS
from hrm_assets.defs.sampled.jobs import sample_job
from hrm_assets.defs.sampled.sensors import sampled_epochs_sensor
from hrm_assets.defs.tokenized.assets import TOKENIZED_ASSETS
from hrm_assets.defs.tokenized.jobs import TOKENIZE_JOBS
from hrm_assets.defs.tokenized.sensors import cleaned_files_sensor
from hrm_assets.defs.tokenizer.assets import tokenizer


def build_definitions(data_paths: DataPaths | None = None) -> dg.Definitions:
    """The whole graph; ``data_paths`` defaults to the environment (``HRM_DATA_ROOT``, ...)."""
    return dg.Definitions(
        assets=[
            *RAW_ASSETS,
            *CLEANED_ASSETS,
            tokenizer,
            *TOKENIZED_ASSETS,
            *SAMPLED_ASSETS,
            *EXPORT_ASSETS,
        ],
        asset_checks=SAMPLED_CHECKS,
        jobs=[observe_raw_job, clean_job, *TOKENIZE_JOBS.values(), sample_job],
        schedules=[rebuild_schedule],
        sensors=[cleaned_files_sensor, AUTOMATION_SENSOR, sampled_epochs_sensor],
        resources={"data_paths": data_paths or DataPaths.from_environment()},
        executor=executor_from_environment(),
    )


defs = build_definitions()
