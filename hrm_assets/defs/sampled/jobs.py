"""The job that writes sampled epochs; the sensor requests one run per training node."""

import dagster as dg

from hrm_assets.defs.common.keys import SAMPLED_PREFIX

sample_job = dg.define_asset_job(
    name="sample_epochs",
    selection=dg.AssetSelection.groups(SAMPLED_PREFIX),
    description="Materialize sampled/<node> (select one node's asset to run it alone).",
)
