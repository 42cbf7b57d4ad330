"""Raw sources: one observable asset per source, the job that observes them all, and the
nightly schedule that does so (automation rebuilds what changed)."""

import dagster as dg

from hrm_assets.defs.raw.assets import RAW_ASSETS
from hrm_assets.defs.raw.jobs import observe_raw_job
from hrm_assets.defs.raw.schedules import rebuild_schedule

defs = dg.Definitions(assets=RAW_ASSETS, jobs=[observe_raw_job], schedules=[rebuild_schedule])
