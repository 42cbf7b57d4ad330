"""Exports of a training node's sampled epochs for other trainers: ``export/megatron/<node>``
(a Megatron-LM indexed dataset) and ``export/packed/<node>`` (packed sequences with loss masks).

Each runs on the node's Celery queue, like ``sampled/<node>``, because a node's sampled folder
may be local to it (``/dev/shm/sampled``). The work is :mod:`hrm_assets.export.export_runs`;
outputs go to ``$HRM_DATA_ROOT/export/{megatron,packed}/<node>/``.
"""

from pathlib import Path

import dagster as dg

from hrm_assets.defs.common.executor import CELERY_QUEUE_TAG
from hrm_assets.defs.common.keys import EXPORT_PREFIX, export_key, sampled_key
from hrm_assets.defs.common.metadata import share_bars, table
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.sampled.assets import NODE_TAG
from hrm_assets.sampling import defaults
from hrm_assets.sampling.training_nodes import TrainingNode, load_training_nodes


class ExportSourceConfig(dg.Config):
    """Which rows to export: one epoch of the node's sampled folder, or (``whole_corpus``)
    every row of the tokenized root, untruncated."""

    epoch: int = 0
    whole_corpus: bool = False


class PackedExportConfig(ExportSourceConfig):
    """Packing settings; ``context_size`` 0 means the sampled folder's own."""

    context_size: int = 0
    seed: int = defaults.SEED.default


def export_dir(data_paths: DataPaths, kind: str, node: TrainingNode) -> Path:
    return data_paths.root / EXPORT_PREFIX / kind / node.name


def _source(config: ExportSourceConfig, data_paths: DataPaths, node: TrainingNode) -> dict:
    if config.whole_corpus:
        return {"tokenized_dir": data_paths.tokenized_root}
    return {"sampled_dir": node.output_dir(data_paths.root), "epoch": config.epoch}


def _files_table(files: dict) -> dg.MetadataValue:
    return table(
        [
            {"file": name, "bytes": entry["size"], "sha256": entry["sha256"]}
            for name, entry in sorted(files.items())
        ]
    )


def _data_version(files: dict) -> dg.DataVersion:
    from hrm_assets.common.hashing import value_sha256

    return dg.DataVersion(value_sha256(files))


def _fill_chart(summary) -> str:
    import base64

    from hrm_assets.export.chart import fill_chart_png

    png = fill_chart_png(summary.fill_buckets, summary.packing_efficiency or 0.0)
    return base64.b64encode(png).decode("ascii")


def _common_metadata(summary, node: TrainingNode) -> dict:
    return {
        "dagster/row_count": summary.rows,
        "sequences": summary.sequences,
        "tokens": summary.tokens,
        "response_tokens": summary.response_tokens,
        "token_dtype": summary.token_dtype,
        "source": dg.MetadataValue.json(summary.source),
        "output_path": dg.MetadataValue.path(summary.output),
        "files": _files_table(summary.files),
        "training_node": node.name,
    }


def _node_asset(kind: str, node: TrainingNode, description: str):
    return dg.asset(
        key=export_key(kind, node.name),
        group_name=EXPORT_PREFIX,
        deps=[sampled_key(node.name)],
        kinds={"python", "numpy"},
        op_tags={CELERY_QUEUE_TAG: node.queue_name(), NODE_TAG: node.name},
        tags={NODE_TAG: node.name},
        description=description,
        code_version="1",
    )


def build_megatron_export_asset(node: TrainingNode) -> dg.AssetsDefinition:
    @_node_asset(
        "megatron",
        node,
        f"Training node {node.name!r}'s sampled epoch as a Megatron-LM indexed dataset "
        f"(text_document.bin/.idx, response_start.npy).",
    )
    def megatron_export(
        context: dg.AssetExecutionContext, config: ExportSourceConfig, data_paths: DataPaths
    ) -> dg.MaterializeResult:
        from hrm_assets.export.export_runs import export_megatron

        output = export_dir(data_paths, "megatron", node)
        context.log.info(f"exporting into {output}")
        summary = export_megatron(output, **_source(config, data_paths, node))
        return dg.MaterializeResult(
            data_version=_data_version(summary.files),
            metadata={
                **_common_metadata(summary, node),
                "path_prefix": dg.MetadataValue.path(str(output / "text_document")),
                "documents": summary.sequences,
            },
        )

    return megatron_export


def build_packed_export_asset(node: TrainingNode) -> dg.AssetsDefinition:
    @_node_asset(
        "packed",
        node,
        f"Training node {node.name!r}'s sampled epoch packed first-fit-decreasing into "
        f"context_size sequences, with loss masks, position ids and segment ids (.npy).",
    )
    def packed_export(
        context: dg.AssetExecutionContext, config: PackedExportConfig, data_paths: DataPaths
    ) -> dg.MaterializeResult:
        from hrm_assets.export.export_runs import export_packed

        output = export_dir(data_paths, "packed", node)
        context.log.info(f"packing into {output}")
        summary = export_packed(
            output,
            context_size=config.context_size or None,
            seed=config.seed,
            warn=context.log.warning,
            **_source(config, data_paths, node),
        )
        total = max(1, summary.sequences)
        return dg.MaterializeResult(
            data_version=_data_version(summary.files),
            metadata={
                **_common_metadata(summary, node),
                "packing_efficiency": summary.packing_efficiency,
                "capacity_tokens": summary.capacity_tokens,
                "context_size": summary.settings["context_size"],
                "seed": summary.settings["seed"],
                "rows_not_packed_overlong": summary.overlong_rows,
                "overlong_row_examples": dg.MetadataValue.json(summary.overlong_examples),
                "sequence_fill": dg.MetadataValue.md(
                    share_bars(
                        {label: n / total for label, n in summary.fill_buckets.items()},
                        title="Sequences",
                    )
                ),
                "sequence_fill_chart": dg.MetadataValue.md(
                    f"![Packed sequences by fill](data:image/png;base64,{_fill_chart(summary)})"
                ),
            },
        )

    return packed_export


EXPORT_ASSETS = [
    build(node)
    for node in load_training_nodes()
    for build in (build_megatron_export_asset, build_packed_export_asset)
]
