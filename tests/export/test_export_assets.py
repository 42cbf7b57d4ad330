"""The ``export/megatron/<node>`` and ``export/packed/<node>`` assets: materialized after
``sampled/<node>`` in one run, they write their folders under ``$HRM_DATA_ROOT/export/`` and
describe them in their metadata."""

from __future__ import annotations

import base64

import dagster as dg
import numpy as np
from support.sampled_asset import data_paths  # noqa: F401 (fixture)
from support.sampled_corpus import sampled_rows

from hrm_assets.common.manifest import verify_folder
from hrm_assets.defs.common.keys import export_key
from hrm_assets.defs.export.assets import (
    build_megatron_export_asset,
    build_packed_export_asset,
    export_dir,
)
from hrm_assets.defs.sampled.assets import build_sampled_asset
from hrm_assets.export.megatron import read_megatron
from hrm_assets.sampling.training_nodes import TrainingNode

NODE = TrainingNode(name="export-node", queue="node-export")


def materialize(paths, megatron: dict, packed: dict) -> dg.ExecuteInProcessResult:
    with dg.instance_for_test() as instance:
        return dg.materialize(
            [
                build_sampled_asset(NODE),
                build_megatron_export_asset(NODE),
                build_packed_export_asset(NODE),
            ],
            instance=instance,
            resources={"data_paths": paths},
            run_config={
                "ops": {
                    "sampled__export_node": {"config": {"epochs": 2, "context_size": 64}},
                    "export__megatron__export_node": {"config": megatron},
                    "export__packed__export_node": {"config": packed},
                }
            },
        )


def metadata_of(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == key]
    return {name: value.value for name, value in event.materialization.metadata.items()}


def test_both_exports_materialize_after_the_sampled_epochs(data_paths):  # noqa: F811
    result = materialize(data_paths, {"epoch": 1}, {"epoch": 1, "seed": 4})
    assert result.success
    sampled = NODE.output_dir(data_paths.root)
    rows = sampled_rows(sampled, 1)
    tokens = sum(len(i) + len(r) for i, r in rows)

    megatron_dir = export_dir(data_paths, "megatron", NODE)
    assert megatron_dir == data_paths.root / "export" / "megatron" / NODE.name
    assert verify_folder(megatron_dir).ok
    dataset = read_megatron(megatron_dir / "text_document")
    for index, (instruction, response) in enumerate(rows):
        np.testing.assert_array_equal(dataset[index], np.concatenate([instruction, response]))
    metadata = metadata_of(result, export_key("megatron", NODE.name))
    assert metadata["dagster/row_count"] == metadata["sequences"] == len(rows)
    assert metadata["tokens"] == tokens
    assert metadata["token_dtype"] == "uint16"
    assert metadata["source"] == {"kind": "sampled", "path": str(sampled), "epoch": 1}
    assert {record.data["file"] for record in metadata["files"].records} >= {
        "text_document.bin",
        "text_document.idx",
        "text_document.response_start.npy",
    }

    packed_dir = export_dir(data_paths, "packed", NODE)
    assert verify_folder(packed_dir).ok
    packed = metadata_of(result, export_key("packed", NODE.name))
    assert packed["tokens"] == tokens and packed["dagster/row_count"] == len(rows)
    assert packed["context_size"] == 64 and packed["seed"] == 4
    shape = np.load(packed_dir / "tokens.npy", mmap_mode="r").shape
    assert shape == (packed["sequences"], 64)
    assert packed["packing_efficiency"] == tokens / (packed["sequences"] * 64)
    assert packed["rows_not_packed_overlong"] == 0
    assert "Sequences" in packed["sequence_fill"]
    chart = packed["sequence_fill_chart"]
    assert chart.startswith("![Packed sequences by fill](data:image/png;base64,")
    assert base64.b64decode(chart.split(",", 1)[1].rstrip(")")).startswith(b"\x89PNG")


def test_whole_corpus_by_config(data_paths):  # noqa: F811
    result = materialize(
        data_paths, {"whole_corpus": True}, {"whole_corpus": True, "context_size": 64}
    )
    assert result.success
    megatron = metadata_of(result, export_key("megatron", NODE.name))
    assert megatron["source"] == {"kind": "tokenized", "path": str(data_paths.tokenized_root)}
    packed = metadata_of(result, export_key("packed", NODE.name))
    # Untruncated rows longer than the context are reported, not dropped silently.
    assert packed["dagster/row_count"] + packed["rows_not_packed_overlong"] == megatron["sequences"]


def test_the_exports_are_in_the_definitions_on_the_nodes_queue():
    from hrm_assets.definitions import build_definitions
    from hrm_assets.defs.common.executor import CELERY_QUEUE_TAG
    from hrm_assets.sampling.training_nodes import load_training_nodes

    graph = build_definitions().resolve_asset_graph()
    for node in load_training_nodes():
        for kind in ("megatron", "packed"):
            key = export_key(kind, node.name)
            asset = graph.get(key)
            assert asset.group_name == "export"
            assert dg.AssetKey(["sampled", node.name]) in asset.parent_keys
        op = build_packed_export_asset(node).op
        assert op.tags[CELERY_QUEUE_TAG] == node.queue_name()
