"""Jobs over the unpartitioned head of the graph."""

import dagster as dg

clean_job = dg.define_asset_job(
    name="clean_and_train_tokenizer",
    selection=dg.AssetSelection.groups("cleaned", "tokenizer"),
    description="Clean every source, then train (or adopt) the tokenizer.",
)
