"""Moved to :mod:`hrm_assets.contracts.framing` (the framing tokens are a contract of every
stage); this name is kept for the importers not yet moved."""

from hrm_assets.contracts.framing import (  # noqa: F401
    DEFAULT_BOQ,
    DEFAULT_CONDITIONS,
    DEFAULT_EOA,
    DEFAULT_EOQ,
    KNOWN_TAGS,
    Framing,
    parse_conditions,
    split_condition,
    tokenizer_info_json,
)
