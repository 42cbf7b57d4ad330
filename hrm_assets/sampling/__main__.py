"""``python -m hrm_assets.sampling key=value ...`` (``hrm-sample``): data_io's sampling command."""

import sys

from hrm_assets.sampling.cli import main

sys.exit(main())
