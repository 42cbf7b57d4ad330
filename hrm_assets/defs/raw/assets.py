"""Raw sources as observable source assets: their data version says when to re-clean."""

import warnings

import dagster as dg

from hrm_assets.cleaning.raw_versions import observe_raw
from hrm_assets.cleaning.sources import SOURCES, SourceSpec
from hrm_assets.defs.common.keys import RAW_PREFIX, raw_key
from hrm_assets.defs.common.resources import DataPaths


def build_raw_asset(spec: SourceSpec) -> dg.AssetsDefinition:
    # An observable AssetsDefinition rather than @observable_source_asset's SourceAsset: Dagster
    # converts each SourceAsset into one whenever it builds the asset graph, and reads the
    # deprecated OpDefinition.version in doing so (a DeprecationWarning per source, every load).
    key = raw_key(spec.name)

    @dg.multi_observable_source_asset(
        name=key.to_python_identifier(),
        specs=[
            dg.AssetSpec(
                key,
                group_name=RAW_PREFIX,
                description=f"Raw {spec.name}: {spec.layout.describe(spec)}",
            )
        ],
    )
    def raw(context, data_paths: DataPaths) -> dg.ObserveResult:
        observation = observe_raw(spec, data_paths.raw_path)
        if observation.problem:
            context.log.warning(f"raw/{spec.name}: {observation.problem}")
        metadata = {"where": observation.where, "files": observation.files}
        metadata["bytes"] = observation.bytes
        if observation.problem:
            metadata["problem"] = observation.problem
        return dg.ObserveResult(
            asset_key=key, data_version=dg.DataVersion(observation.version), metadata=metadata
        )

    return raw


with warnings.catch_warnings():
    # Observable source assets are marked beta; they are Dagster's way to version raw inputs.
    warnings.simplefilter("ignore", dg.BetaWarning)
    RAW_ASSETS = [build_raw_asset(spec) for spec in SOURCES.values()]
