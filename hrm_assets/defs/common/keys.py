"""Asset keys and group names of the graph (docs/CONTRACTS.md section 5)."""

import dagster as dg

RAW_PREFIX = "raw"
CLEANED_PREFIX = "cleaned"
TOKENIZED_PREFIX = "tokenized"
SAMPLED_PREFIX = "sampled"
EXPORT_PREFIX = "export"
TOKENIZER_KEY = dg.AssetKey("tokenizer")


def raw_key(source: str) -> dg.AssetKey:
    return dg.AssetKey([RAW_PREFIX, source])


def cleaned_key(source: str) -> dg.AssetKey:
    return dg.AssetKey([CLEANED_PREFIX, source])


def tokenized_key(source: str) -> dg.AssetKey:
    return dg.AssetKey([TOKENIZED_PREFIX, source])


def sampled_key(node: str) -> dg.AssetKey:
    return dg.AssetKey([SAMPLED_PREFIX, node])


def export_key(kind: str, node: str) -> dg.AssetKey:
    """``export/<kind>/<node>``: ``kind`` is ``megatron`` or ``packed``."""
    return dg.AssetKey([EXPORT_PREFIX, kind, node])
