"""The BPE tokenizer: trained on every cleaned file (ours, or the adopted roots' when
``HRM_ADOPT_CLEANED`` names some), or adopted from a given tokenizer.json."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import is_cleaned_name, is_temporary
from hrm_assets.common.object_mirror import mirror_tree, note_uploaded
from hrm_assets.common.settings import TOKENIZER_JSON
from hrm_assets.common.storage import ObjectRoot, ObjectStore
from hrm_assets.defs.common.automation import on_missing_only
from hrm_assets.defs.common.keys import TOKENIZER_KEY, cleaned_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.sampling.prefix_config import load_prefix_rules
from hrm_assets.tokenizer.train import (
    DEFAULT_VOCAB_SIZE,
    SPECIAL_TOKENS,
    LocalCorpus,
    TokenizerOutcome,
    TokenizerOwnershipError,
    TrainingCorpus,
    adopted_tokenizer,
    build_tokenizer,
    record_path_of,
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


# The tokenizer folder's files: the tokenizer and the record of what it was trained on.
TOKENIZER_FILES = (TOKENIZER_JSON, record_path_of(Path(TOKENIZER_JSON)).name)


def is_cleaned_object(relative: str) -> bool:
    return is_cleaned_name(relative.rsplit("/", 1)[-1]) and not is_temporary(relative)


def upload_changed(store: ObjectStore, folder: Path, names: tuple[str, ...]) -> None:
    """PUT each local file whose SHA-256 differs from its object's; delete the objects of
    files that are gone (ours: they carry our SHA-256)."""
    heads = store.head_many(names)
    uploaded = []
    for name in names:
        path, known = folder / name, heads[name]
        if path.is_file():
            digest = file_sha256(path)
            if known is None or known.sha256 != digest:
                store.put_file(name, path, sha256=digest)
                uploaded.append(name)
        elif known is not None and known.sha256:
            store.delete([name])
    # The working copy holds these bytes already: no download of them next time.
    note_uploaded(folder, store, uploaded)


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
    cleaned_location = data_paths.cleaned_location
    tokenizer_location = data_paths.tokenizer_location
    if isinstance(cleaned_location, ObjectRoot):
        # Trained locally: the cleaned files come through the working copy (only objects whose
        # ETag changed are downloaded).
        mirror_tree(cleaned_location, select=is_cleaned_object)
    if isinstance(tokenizer_location, ObjectRoot):
        mirror_tree(tokenizer_location, select=lambda relative: relative in TOKENIZER_FILES)
    try:
        outcome = build_tokenizer(
            cleaned_root=data_paths.cleaned_root,
            out_path=data_paths.tokenizer_json,
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
    path = str(outcome.path)
    # An adopted tokenizer's object is the user's: nothing is uploaded over it.
    if isinstance(tokenizer_location, ObjectRoot) and not outcome.adopted:
        upload_changed(ObjectStore(tokenizer_location), data_paths.tokenizer_dir, TOKENIZER_FILES)
        path = str(tokenizer_location.join(TOKENIZER_JSON))
    return dg.MaterializeResult(
        data_version=dg.DataVersion(outcome.sha256), metadata=tokenizer_metadata(outcome, path)
    )


def adopted_training_corpus(data_paths: DataPaths) -> TrainingCorpus | None:
    """What a tokenizer trains on when cleaned roots are adopted: every cleaned file of the
    roots (links to files followed, as in a Hub cache; objects of s3:// roots, read only to
    train), never written. None: the cleaned root is ours."""
    roots = data_paths.adopted_cleaned_roots
    if not roots:
        return None
    if any(isinstance(root, ObjectRoot) for root in roots):
        from hrm_assets.defs.cleaned.adopted import adopted_objects

        return adopted_objects(data_paths).training_corpus()
    from hrm_assets.adoption.cleaned import scan_adopted

    return LocalCorpus(scan_adopted(roots).files)


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
