"""Cleaned sources: one asset per source (with its ``rows_valid`` check) and the job that
cleans every source and trains the tokenizer."""

import dagster as dg

from hrm_assets.defs.cleaned.assets import CLEANED_ASSETS
from hrm_assets.defs.cleaned.jobs import clean_job

defs = dg.Definitions(assets=CLEANED_ASSETS, jobs=[clean_job])
