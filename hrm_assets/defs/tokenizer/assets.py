"""The BPE tokenizer: trained on every cleaned file (ours, or the adopted roots' when
``HRM_ADOPT_CLEANED`` names some), or adopted from a given tokenizer.json."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from hrm_assets.adoption.roots import adopted_roots
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.storage import ObjectRoot
from hrm_assets.defs.common.automation import on_missing_only
from hrm_assets.defs.common.keys import TOKENIZER_KEY, cleaned_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.sampling.prefix_config import load_prefix_rules
from hrm_assets.tokenizer.build import build_tokenizer_at
from hrm_assets.tokenizer.train import (
    DEFAULT_VOCAB_SIZE,
    SPECIAL_TOKENS,
    TokenizerOutcome,
    TokenizerOwnershipError,
    TrainingCorpus,
    adopted_tokenizer,
)


class TokenizerConfig(dg.Config):
    vocab_size: int = Field(default=DEFAULT_VOCAB_SIZE, ge=512, le=1 << 24)
    seed: int = Field(default=0, ge=0)
    tokenizer_path: str | None = Field(
        default=None,
        description="Copy this tokenizer.json into the tokenizer root instead of training one "
        "(refused over a tokenizer.json hrm-data did not write)",
    )
    retrain: bool = Field(
        default=False,
        description="Train anew although a tokenizer with these settings exists (the whole "
        "corpus is then re-tokenized); refused over a tokenizer.json hrm-data did not train, "
        "which is adopted as it is",
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
    try:
        build = build_tokenizer_at(
            DataRoot(data_paths.cleaned_location),
            DataRoot(data_paths.tokenizer_location),
            rules=load_prefix_rules(Path(data_paths.prefix_config_path)),
            vocab_size=config.vocab_size,
            seed=config.seed,
            adopt_path=Path(config.tokenizer_path) if config.tokenizer_path else None,
            retrain=config.retrain,
            log=context.log.info,
            corpus=adopted_training_corpus(data_paths),
        )
    except TokenizerOwnershipError as error:
        raise dg.Failure(description=str(error)) from None
    return dg.MaterializeResult(
        data_version=dg.DataVersion(build.outcome.sha256),
        metadata=tokenizer_metadata(build.outcome, build.where),
    )


def adopted_training_corpus(data_paths: DataPaths) -> TrainingCorpus | None:
    """What a tokenizer trains on when cleaned roots are adopted (None: the cleaned root is
    ours): every cleaned file of the folders (links followed), or the cleaned objects of the
    ``s3://`` roots (their hashes kept in the memo file). Never written."""
    adopted = adopted_roots(data_paths.adopted_cleaned_roots, data_paths.root)
    return adopted.training_corpus() if adopted is not None else None


def tokenizer_metadata(outcome: TokenizerOutcome, path: str) -> dict:
    return {
        "path": dg.MetadataValue.path(path),
        "vocab_size": outcome.vocab_size,
        "sha256": outcome.sha256,
        "trained": outcome.trained,
        # A tokenizer.json hrm-data did not write (data_io's, a download): never modified.
        "adopted": outcome.adopted,
        "corpus_changed_since_training": outcome.corpus_changed,
        "documents": outcome.documents,
        "special_tokens": dg.MetadataValue.json(list(SPECIAL_TOKENS)),
    }


def adopted_tokenizer_record(
    instance: dg.DagsterInstance, data_paths: DataPaths
) -> dg.AssetMaterialization | None:
    """A record of the tokenizer (without a run) when its root holds a ``tokenizer.json``
    hrm-data did not write whose hash is not the one last recorded: data_io's tokenizer shows
    materialized, with its hash and vocabulary, as soon as it is there. Local roots only."""
    if isinstance(data_paths.tokenizer_location, ObjectRoot):
        return None
    path = data_paths.tokenizer_json
    if not path.is_file():
        return None
    event = instance.get_latest_materialization_event(TOKENIZER_KEY)
    materialization = event.asset_materialization if event is not None else None
    recorded = materialization.tags.get("dagster/data_version") if materialization else None
    if recorded is not None and recorded == file_sha256(path):
        return None
    outcome = adopted_tokenizer(path)
    if outcome is None:
        return None
    return dg.AssetMaterialization(
        asset_key=TOKENIZER_KEY,
        metadata=tokenizer_metadata(outcome, str(path)),
        tags={"dagster/data_version": outcome.sha256},
    )
