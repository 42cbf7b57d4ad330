"""``python -m hrm_assets.tokenization INPUT... -o OUT --tokenizer-path ...`` (``hrm-tokenize``)."""

import sys

from hrm_assets.tokenization.cli import main

sys.exit(main())
