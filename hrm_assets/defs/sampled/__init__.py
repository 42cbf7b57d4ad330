"""Sampled epochs: one asset per training node with its checks, the job that writes them and
the sensor that requests a node's run when the tokenized data changes."""

import dagster as dg

from hrm_assets.defs.sampled.assets import SAMPLED_ASSETS
from hrm_assets.defs.sampled.checks import SAMPLED_CHECKS
from hrm_assets.defs.sampled.jobs import sample_job
from hrm_assets.defs.sampled.sensors import sampled_epochs_sensor

defs = dg.Definitions(
    assets=SAMPLED_ASSETS,
    asset_checks=SAMPLED_CHECKS,
    jobs=[sample_job],
    sensors=[sampled_epochs_sensor],
)
