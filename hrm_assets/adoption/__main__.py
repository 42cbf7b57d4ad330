"""``python -m hrm_assets.adoption``: record the adopted cleaned roots in the instance
(``hrm_assets.defs.cleaned.adopt_command``), with the ``.env`` Dagster's CLI reads."""

import sys

from hrm_assets.local_env import adopt_main

sys.exit(adopt_main())
