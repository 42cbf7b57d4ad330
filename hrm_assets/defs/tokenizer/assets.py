"""The BPE tokenizer: trained on every cleaned file, or adopted from a given tokenizer.json."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.defs.common.automation import on_missing_only
from hrm_assets.defs.common.keys import TOKENIZER_KEY, cleaned_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.sampling.prefix_config import load_prefix_rules
from hrm_assets.tokenizer.train import DEFAULT_VOCAB_SIZE, SPECIAL_TOKENS, build_tokenizer


class TokenizerConfig(dg.Config):
    vocab_size: int = Field(default=DEFAULT_VOCAB_SIZE, ge=512, le=1 << 24)
    seed: int = Field(default=0, ge=0)
    tokenizer_path: str | None = Field(
        default=None, description="Adopt this tokenizer.json instead of training one"
    )
    retrain: bool = Field(
        default=False,
        description="Train anew although a tokenizer with these settings exists (the whole "
        "corpus is then re-tokenized)",
    )


@dg.asset(
    key=TOKENIZER_KEY,
    group_name="tokenizer",
    deps=[cleaned_key(name) for name in SOURCES],
    kinds={"python", "json"},
    description="Byte-level BPE in data_io's configuration (tokenizer.json).",
    code_version="1",
    automation_condition=on_missing_only(),
)
def tokenizer(
    context: dg.AssetExecutionContext, config: TokenizerConfig, data_paths: DataPaths
) -> dg.MaterializeResult:
    outcome = build_tokenizer(
        cleaned_root=data_paths.cleaned_root,
        out_path=data_paths.tokenizer_json,
        rules=load_prefix_rules(Path(data_paths.prefix_config_path)),
        vocab_size=config.vocab_size,
        seed=config.seed,
        adopt_path=Path(config.tokenizer_path) if config.tokenizer_path else None,
        retrain=config.retrain,
        log=context.log.info,
    )
    return dg.MaterializeResult(
        data_version=dg.DataVersion(outcome.sha256),
        metadata={
            "path": dg.MetadataValue.path(str(outcome.path)),
            "vocab_size": outcome.vocab_size,
            "sha256": outcome.sha256,
            "trained": outcome.trained,
            "corpus_changed_since_training": outcome.corpus_changed,
            "documents": outcome.documents,
            "special_tokens": dg.MetadataValue.json(list(SPECIAL_TOKENS)),
        },
    )
