"""One job per source's tokenized asset (each has its own dynamic partitions)."""

import dagster as dg

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.defs.common.keys import tokenized_key

TOKENIZE_JOBS = {
    name: dg.define_asset_job(
        name=f"tokenize_{name}",
        selection=dg.AssetSelection.assets(tokenized_key(name)),
        description=f"Tokenize one cleaned file (partition) of {name}.",
    )
    for name in SOURCES
}
