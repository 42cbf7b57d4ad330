"""Exports of each training node's sampled epochs: Megatron indexed datasets and packed
sequences."""

import dagster as dg

from hrm_assets.defs.export.assets import EXPORT_ASSETS

defs = dg.Definitions(assets=EXPORT_ASSETS)
