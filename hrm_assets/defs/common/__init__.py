"""What every domain shares: asset keys, automation and freshness, the ``DataPaths`` resource,
the executor, metadata helpers; and the one graph-wide definition, the automation sensor."""

import dagster as dg

from hrm_assets.defs.common.automation import AUTOMATION_SENSOR

defs = dg.Definitions(sensors=[AUTOMATION_SENSOR])
