"""Blocking check per tokenized partition: arrays are consistent with each other and the vocab."""

import json
import warnings

import dagster as dg

from hrm_assets.defs.common.keys import tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.sources import SOURCES, SourceSpec
from hrm_assets.tokenize import TOKENIZER_INFO_FILE
from hrm_assets.validation import check_tokenized_folder


def build_tokenized_check(spec: SourceSpec) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=tokenized_key(spec.name),
        name="arrays_consistent",
        blocking=True,
        partitions_def=TOKENIZED_PARTITIONS[spec.name],
        description="Spans inside tokens.npy, ids below the vocab size, row counts as recorded.",
    )
    def arrays_consistent(
        context: dg.AssetCheckExecutionContext, data_paths: DataPaths
    ) -> dg.AssetCheckResult:
        info_path = data_paths.tokenized_root / TOKENIZER_INFO_FILE
        vocab_size = json.loads(info_path.read_text(encoding="utf-8"))["vocab_size"]
        report = check_tokenized_folder(
            data_paths.tokenized_root / context.partition_key, vocab_size
        )
        return dg.AssetCheckResult(
            passed=report.passed,
            metadata={**report.figures, "problems": dg.MetadataValue.json(report.problems)},
        )

    return arrays_consistent


with warnings.catch_warnings():
    # Partitioned asset checks are a Dagster preview; a per-file check is what we need.
    warnings.simplefilter("ignore", dg.PreviewWarning)
    TOKENIZED_CHECKS = [build_tokenized_check(spec) for spec in SOURCES.values()]
