"""The job that writes sampled epochs; the sensor requests one run per training node.

By hand, for one node: ``dagster asset materialize -m hrm_assets.definitions --select
'key:"sampled/<node>"'``, or ``dagster job execute -m hrm_assets.definitions -j sample_epochs
-o <op>`` with the node's op name (``sampled__<node, - as _>``).
"""

import dagster as dg

from hrm_assets.defs.common.keys import SAMPLED_PREFIX

sample_job = dg.define_asset_job(
    name="sample_epochs",
    selection=dg.AssetSelection.groups(SAMPLED_PREFIX),
    description="Materialize sampled/<node> for every training node (a run of the "
    "sampled_epochs_sensor selects one node).",
)
