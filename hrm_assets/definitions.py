"""The Definitions of hrm-data: every domain under ``defs/``, one resource, one executor."""

import dagster as dg

from hrm_assets.defs.cleaned.assets import CLEANED_ASSETS
from hrm_assets.defs.cleaned.jobs import clean_job
from hrm_assets.defs.common.executor import executor_from_environment
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.raw.assets import RAW_ASSETS
from hrm_assets.defs.sampled.assets import SAMPLED_ASSETS
from hrm_assets.defs.sampled.jobs import sample_job
from hrm_assets.defs.tokenized.assets import TOKENIZED_ASSETS
from hrm_assets.defs.tokenized.jobs import TOKENIZE_JOBS
from hrm_assets.defs.tokenized.sensors import cleaned_files_sensor
from hrm_assets.defs.tokenizer.assets import tokenizer

defs = dg.Definitions(
    assets=[*RAW_ASSETS, *CLEANED_ASSETS, tokenizer, *TOKENIZED_ASSETS, *SAMPLED_ASSETS],
    jobs=[clean_job, *TOKENIZE_JOBS.values(), sample_job],
    sensors=[cleaned_files_sensor],
    resources={"data_paths": DataPaths.from_environment()},
    executor=executor_from_environment(),
)
