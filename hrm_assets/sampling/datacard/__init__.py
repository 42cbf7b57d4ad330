"""The data card of a sampled output: what a training run was fed, ready to publish.

A card records, per source and per task (tokenized file), the rows and tokens available, kept
and sampled per epoch, the prefix_config rule applied, the share of the mix and the rows
dropped or truncated; the tokenizer (SHA-256, vocabulary, framing), the prefix_config verbatim
and the seed; the code version; the SHA-256 of every output file; the upstream Hub dataset ids
and revisions. The sampler writes it into every sampled folder as ``datacard.json`` (canonical
JSON) and ``DATACARD.md``; the same inputs give the same bytes, in any folder.

- :func:`build_data_card` (pure): the card as a plain dict.
- :func:`render_markdown`, :func:`canonical_json_bytes`: its two file forms.
- :func:`write_sampled_data_card`: what the sampler calls on its staged folder.
- :func:`read_data_card`, :func:`share_chart_png`: for the Dagster asset's metadata.
- :func:`data_card_problems`: whether a folder's card still describes it (``hrm-verify``).

Nothing here imports the sampler, numpy or Dagster at import time.
"""

from hrm_assets.sampling.datacard.builder import (
    CARD_FORMAT,
    PrefixConfigRecord,
    build_data_card,
)
from hrm_assets.sampling.datacard.canonical_json import canonical_json_bytes
from hrm_assets.sampling.datacard.chart import share_chart_png
from hrm_assets.sampling.datacard.code_version import code_version, sampling_code_version
from hrm_assets.sampling.datacard.markdown import render_markdown
from hrm_assets.sampling.datacard.verification import data_card_problems
from hrm_assets.sampling.datacard.writer import (
    CARD_FILES,
    DATACARD_JSON,
    DATACARD_MARKDOWN,
    DataCardError,
    read_data_card,
    read_prefix_config,
    write_data_card,
    write_sampled_data_card,
)

__all__ = [
    "CARD_FILES",
    "CARD_FORMAT",
    "DATACARD_JSON",
    "DATACARD_MARKDOWN",
    "DataCardError",
    "PrefixConfigRecord",
    "build_data_card",
    "canonical_json_bytes",
    "code_version",
    "data_card_problems",
    "read_data_card",
    "read_prefix_config",
    "render_markdown",
    "sampling_code_version",
    "share_chart_png",
    "write_data_card",
    "write_sampled_data_card",
]
