"""Scheduled rebuilds: observe raw sources on a cron; automation redoes what changed."""

import os

import dagster as dg

from hrm_assets.defs.raw.jobs import observe_raw_job

REBUILD_CRON_ENV = "HRM_REBUILD_CRON"
DEFAULT_REBUILD_CRON = "0 2 * * *"  # nightly, 02:00

rebuild_schedule = dg.ScheduleDefinition(
    name="nightly_raw_observation",
    job=observe_raw_job,
    cron_schedule=os.environ.get(REBUILD_CRON_ENV, DEFAULT_REBUILD_CRON),
    execution_timezone=os.environ.get("HRM_REBUILD_TIMEZONE", "UTC"),
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Observes raw sources; changed data versions make automation rebuild "
    "the cleaned, tokenized and sampled assets downstream of them.",
)
