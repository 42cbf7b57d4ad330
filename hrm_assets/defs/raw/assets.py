"""Raw sources as observable source assets: their data version says when to re-clean."""

import warnings

import dagster as dg

from hrm_assets.defs.common.keys import RAW_PREFIX, raw_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.raw_versions import observe_raw
from hrm_assets.sources import SOURCES, SourceSpec


def build_raw_asset(spec: SourceSpec) -> dg.SourceAsset:
    @dg.observable_source_asset(
        key=raw_key(spec.name),
        group_name=RAW_PREFIX,
        description=f"Raw {spec.name}: {spec.layout.describe(spec)}",
    )
    def raw(context, data_paths: DataPaths) -> dg.ObserveResult:
        observation = observe_raw(spec, data_paths.raw_path)
        if observation.problem:
            context.log.warning(f"raw/{spec.name}: {observation.problem}")
        metadata = {"where": observation.where, "files": observation.files}
        metadata["bytes"] = observation.bytes
        if observation.problem:
            metadata["problem"] = observation.problem
        return dg.ObserveResult(data_version=dg.DataVersion(observation.version), metadata=metadata)

    return raw


with warnings.catch_warnings():
    # Observable source assets are marked beta; they are Dagster's way to version raw inputs.
    warnings.simplefilter("ignore", dg.BetaWarning)
    RAW_ASSETS = [build_raw_asset(spec) for spec in SOURCES.values()]
