"""The sampled/<node> asset run in process against a test instance, with its DataPaths."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.sampled.assets import build_sampled_asset
from hrm_assets.sampling.training_nodes import TrainingNode
from hrm_assets.tokenization.tokenize import tokenize_tree
from support.cleaned_rows import cleaned_rows
from support.tokenized_trees import write_rules

NODE = TrainingNode(name="e2e-node")


OP_NAME = "sampled__e2e_node"


@pytest.fixture
def data_paths(tmp_path, small_tokenizer_path) -> DataPaths:
    """A data root tokenized with its own tokenizer/tokenizer.json, as the graph leaves it."""
    paths = DataPaths(
        data_root=str(tmp_path / "data"),
        prefix_config_path=str(write_rules(tmp_path / "prefix_config.yaml", [])),
    )
    paths.tokenizer_dir.mkdir(parents=True)
    paths.tokenizer_json.write_bytes(small_tokenizer_path.read_bytes())
    paths.cleaned_root.mkdir(parents=True)
    for name, rows in cleaned_rows().items():
        (paths.cleaned_root / name).write_text(
            "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
        )
    tokenize_tree([paths.cleaned_root], paths.tokenized_root, paths.tokenizer_json, progress=False)
    return paths


def materialize(data_paths: DataPaths, **config) -> dg.ExecuteInProcessResult:
    with dg.instance_for_test() as instance:
        return dg.materialize(
            [build_sampled_asset(NODE)],
            instance=instance,
            resources={"data_paths": data_paths},
            run_config={"ops": {OP_NAME: {"config": {"epochs": 2, **config}}}},
        )
