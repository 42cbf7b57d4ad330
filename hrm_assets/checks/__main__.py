"""``python -m hrm_assets.checks PATH...`` (``hrm-verify``)."""

import sys

from hrm_assets.checks.cli import main

sys.exit(main())
