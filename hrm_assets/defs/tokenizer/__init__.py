"""The tokenizer asset: BPE trained on every cleaned file, or a given ``tokenizer.json``."""

import dagster as dg

from hrm_assets.defs.tokenizer.assets import tokenizer

defs = dg.Definitions(assets=[tokenizer])
