"""The data card of a sampled folder as Dagster metadata: the card itself (Markdown), a table
of each source's share of the mix, and the same shares as a chart."""

import base64
from pathlib import Path

import dagster as dg

from hrm_assets.defs.common.metadata import table
from hrm_assets.sampling.datacard import DATACARD_MARKDOWN, read_data_card, share_chart_png

_SHARE_COLUMNS = (
    "source",
    "hub_id",
    "hub_revision",
    "tasks",
    "rows_available",
    "tokens_available",
    "rows_dropped",
    "rows_truncated",
    "rows_per_epoch",
    "sampled_tokens",
    "token_share",
    "row_share",
)


def data_card_metadata(output: Path) -> dict:
    """Metadata entries for the card in ``output`` (one entry saying so if it has none)."""
    card = read_data_card(output)
    if card is None:
        return {"data_card": dg.MetadataValue.md(f"(no {DATACARD_MARKDOWN} in {output})")}
    records = [{"source": source["name"], **source} for source in card["sources"]]
    chart = base64.b64encode(share_chart_png(card)).decode("ascii")
    return {
        "data_card": dg.MetadataValue.md((Path(output) / DATACARD_MARKDOWN).read_text("utf-8")),
        "data_card_path": dg.MetadataValue.path(str(Path(output) / DATACARD_MARKDOWN)),
        "source_shares": table(records, _SHARE_COLUMNS),
        "source_share_chart": dg.MetadataValue.md(
            f"![Share of the mix per source](data:image/png;base64,{chart})"
        ),
        "tokenizer_sha256": card["tokenizer"]["sha256"],
    }
