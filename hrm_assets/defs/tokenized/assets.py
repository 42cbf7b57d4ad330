"""Tokenized files: ``tokenized/<source>``, one dynamic partition per cleaned file.

A partition whose cleaned file, tokenizer and framing are unchanged does no work and reports
the same data version, so nothing downstream becomes stale.
"""

import dagster as dg

from hrm_assets.defs.common.automation import freshness_policy, on_upstream_data_change
from hrm_assets.defs.common.executor import CELERY_QUEUE_TAG, GENERAL_QUEUE
from hrm_assets.defs.common.keys import TOKENIZED_PREFIX, TOKENIZER_KEY, cleaned_key, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.checks import tokenized_check_results, tokenized_check_specs
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.framing import Framing
from hrm_assets.layout import LayoutError
from hrm_assets.partitioning import partition_file
from hrm_assets.sources import SOURCES, SourceSpec
from hrm_assets.tokenize import TokenizerSetup, tokenize_file, write_tokenizer_info


class TokenizeConfig(dg.Config):
    threads: int | None = None


def build_tokenized_asset(spec: SourceSpec) -> dg.AssetsDefinition:
    @dg.asset(
        key=tokenized_key(spec.name),
        group_name=TOKENIZED_PREFIX,
        deps=[cleaned_key(spec.name), TOKENIZER_KEY],
        partitions_def=TOKENIZED_PARTITIONS[spec.name],
        kinds={"rust", "numpy"},
        op_tags={CELERY_QUEUE_TAG: GENERAL_QUEUE},
        description=f"data_io's token arrays of each cleaned file of {spec.name}",
        code_version="1",
        automation_condition=on_upstream_data_change(),
        freshness_policy=freshness_policy("tokenized"),
        check_specs=tokenized_check_specs(spec),
    )
    def tokenized(
        context: dg.AssetExecutionContext, config: TokenizeConfig, data_paths: DataPaths
    ) -> dg.MaterializeResult:
        key = context.partition_key
        try:
            cleaned_file = partition_file(spec, data_paths.cleaned_root, key)
        except LayoutError as error:
            raise dg.Failure(str(error)) from error
        if cleaned_file is None:
            raise dg.Failure(
                f"cleaned file for partition {key!r} of {spec.name} not found under "
                f"{data_paths.cleaned_root}; rematerialize cleaned/{spec.name}"
            )
        setup = TokenizerSetup.load(data_paths.tokenizer_json, Framing())  # hashed once
        write_tokenizer_info(data_paths.tokenized_root, setup)
        outcome = tokenize_file(
            cleaned_file, data_paths.tokenized_root, setup, threads=config.threads
        )
        context.log.info(
            f"{key}: {'unchanged, skipped' if outcome.skipped else 'tokenized'} "
            f"({outcome.rows:,} rows, {outcome.tokens:,} tokens)"
        )
        return dg.MaterializeResult(
            data_version=dg.DataVersion(outcome.data_version),
            metadata={
                "path": dg.MetadataValue.path(str(outcome.output_dir)),
                "dagster/row_count": outcome.rows,
                "tokens": outcome.tokens,
                "source_bytes": outcome.bytes,
                "skipped": outcome.skipped,
                "tokens_per_row": round(outcome.tokens / outcome.rows, 1) if outcome.rows else 0.0,
            },
            check_results=tokenized_check_results(data_paths.tokenized_root, outcome.output_dir),
        )

    return tokenized


TOKENIZED_ASSETS = [build_tokenized_asset(spec) for spec in SOURCES.values()]
