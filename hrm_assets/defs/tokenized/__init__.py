"""Tokenized sources: one asset per source partitioned by cleaned file (with its checks), a
job per source, and the sensor that keeps the partitions in step with the cleaned files."""

import dagster as dg

from hrm_assets.defs.tokenized.assets import TOKENIZED_ASSETS
from hrm_assets.defs.tokenized.jobs import TOKENIZE_JOBS
from hrm_assets.defs.tokenized.sensors import cleaned_files_sensor

defs = dg.Definitions(
    assets=TOKENIZED_ASSETS, jobs=list(TOKENIZE_JOBS.values()), sensors=[cleaned_files_sensor]
)
