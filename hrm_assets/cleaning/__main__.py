"""``python -m hrm_assets.cleaning SOURCE... --out DIR``: clean sources without Dagster."""

import sys

from hrm_assets.cleaning.clean import main

sys.exit(main())
