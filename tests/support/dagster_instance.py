"""A test Dagster instance, its DataPaths, and the text of a failed run."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest

from hrm_assets.defs.common.resources import DataPaths
from support.tokenized_trees import MIXED_RULES, write_rules


@pytest.fixture
def instance(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        yield instance


@pytest.fixture
def data_paths(tmp_path, small_tokenizer_path) -> DataPaths:
    paths = DataPaths(
        data_root=str(tmp_path / "data"),
        raw_root=str(tmp_path / "raw"),
        prefix_config_path=str(write_rules(tmp_path / "prefix_config.yaml", MIXED_RULES)),
    )
    paths.tokenizer_dir.mkdir(parents=True)
    shutil.copy(small_tokenizer_path, paths.tokenizer_json)
    return paths


def failure_text(result: dg.ExecuteInProcessResult) -> str:
    """The messages of every step failure's error and of its causes."""
    messages = []
    for event in result.all_events:
        if event.is_step_failure:
            error = event.step_failure_data.error
            while error is not None:
                messages.append(error.message)
                error = error.cause or error.context
    return "\n".join(messages)
