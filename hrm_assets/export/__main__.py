import sys

from hrm_assets.export.cli import main

sys.exit(main())
