"""Cleaned sources: ``cleaned/<source>`` writes data_io's rows at data_io's relative paths.

The build (skip if unchanged, on disk or in object storage, the build record) is the cleaning
stage's (``hrm_assets.cleaning.build``); the asset records its outcome and check."""

import dagster as dg

from hrm_assets.cleaning.build import CleanedBuild, build_cleaned
from hrm_assets.cleaning.sources import SOURCES, SourceSpec
from hrm_assets.common.data_root import DataRoot
from hrm_assets.defs.cleaned.adopted import record_adopted_source
from hrm_assets.defs.cleaned.checks import (
    rows_valid_from_summary,
    rows_valid_result,
    rows_valid_spec,
    rows_valid_summary,
)
from hrm_assets.defs.cleaned.metadata import cleaning_metadata
from hrm_assets.defs.common.automation import freshness_policy, on_upstream_data_change
from hrm_assets.defs.common.keys import CLEANED_PREFIX, cleaned_key, raw_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partitions import sync_partitions


def build_cleaned_asset(spec: SourceSpec) -> dg.AssetsDefinition:
    @dg.asset(
        key=cleaned_key(spec.name),
        group_name=CLEANED_PREFIX,
        deps=[raw_key(spec.name)],
        # A declared source's rules are its sources.yaml entry: the UI can filter on kind yaml.
        kinds={"yaml" if spec.rules_version else "python", spec.format},
        description=spec.description or f"data_io's cleaned rows of {spec.name}",
        code_version="1",
        automation_condition=on_upstream_data_change(),
        freshness_policy=freshness_policy("cleaned"),
        check_specs=[rows_valid_spec(spec)],
    )
    def cleaned(context: dg.AssetExecutionContext, data_paths: DataPaths) -> dg.MaterializeResult:
        if data_paths.adopted_cleaned_roots:  # an adopted corpus is recorded, never cleaned
            return record_adopted_source(context, spec, data_paths)
        build = build_cleaned(
            spec,
            DataRoot(data_paths.cleaned_location),
            data_paths.raw_path,
            context.log.info,
            rows_valid_summary,
        )
        added, removed = sync_partitions(
            context.instance, spec, build.local_root, data_paths.tokenized_location, build.files
        )
        if added or removed:
            context.log.info(f"tokenized partitions: +{len(added)} -{len(removed)}")
        return cleaned_result(build)

    return cleaned


def cleaned_result(build: CleanedBuild) -> dg.MaterializeResult:
    """The cleaned asset's record: its content version, the cleaning figures and the check
    (from the build when it has it, else over the source's files)."""
    if build.rows_check is not None:
        rows_valid = rows_valid_from_summary(build.rows_check)
    else:
        rows_valid = rows_valid_result(build.files)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(build.version),
        metadata={
            **cleaning_metadata(build.summary),
            "content_sha256": build.version,
            "raw_version": build.raw_version,
            "rebuilt": build.rebuilt,
            **({"location": build.location} if build.location is not None else {}),
        },
        check_results=[rows_valid],
    )


CLEANED_ASSETS = [build_cleaned_asset(spec) for spec in SOURCES.values()]
