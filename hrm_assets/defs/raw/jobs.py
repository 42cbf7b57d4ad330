"""Observing every raw source records new data versions; automation rebuilds what changed."""

import dagster as dg

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.defs.common.keys import raw_key

observe_raw_job = dg.define_asset_job(
    name="observe_raw_sources",
    selection=dg.AssetSelection.assets(*(raw_key(name) for name in SOURCES)),
    description="Observe every raw source (content hash of local files or Hub revision).",
)
