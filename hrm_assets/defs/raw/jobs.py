"""Observing every raw source records new data versions; automation rebuilds what changed."""

import dagster as dg

from hrm_assets.defs.common.keys import RAW_PREFIX

observe_raw_job = dg.define_asset_job(
    name="observe_raw_sources",
    selection=dg.AssetSelection.groups(RAW_PREFIX),
    description="Observe every raw source (content hash of local files or Hub revision).",
)
