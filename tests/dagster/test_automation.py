"""Declarative automation reacts to data-version changes only, and the partition sensor keeps
tokenized partitions in step with the cleaned files (issue 4)."""

from __future__ import annotations

import dagster as dg
import pytest
from support.graph_fixture import Graph

from hrm_assets.defs.common.keys import cleaned_key, raw_key, tokenized_key
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.defs.tokenized.sensors import cleaned_files_sensor

pytestmark = pytest.mark.slow


def _requested(result, key: dg.AssetKey) -> int:
    return result.get_num_requested(key)


def _materialize(graph: Graph, *keys: dg.AssetKey) -> None:
    job = dg.define_asset_job("by_hand", selection=dg.AssetSelection.assets(*keys))
    defs = dg.Definitions.merge(graph.defs, dg.Definitions(jobs=[job]))
    assert defs.resolve_job_def("by_hand").execute_in_process(instance=graph.instance).success


def _change_gsm8k_raw(graph: Graph) -> None:
    from support.graph_fixture import append_gsm8k_row

    append_gsm8k_row(graph)


def test_identical_rebuild_requests_nothing_and_a_change_flows_down(graph):
    evaluate = dg.evaluate_automation_conditions
    result = evaluate(defs=graph.defs, instance=graph.instance)
    assert result.total_requested == 0, "a fully materialized graph has nothing to do"

    # Same raw content rematerialized: same data version, so nothing downstream is requested.
    _materialize(graph, cleaned_key("gsm8k_train"))
    result = evaluate(defs=graph.defs, instance=graph.instance, cursor=result.cursor)
    assert _requested(result, tokenized_key("gsm8k_train")) == 0
    assert result.total_requested == 0

    # New raw content, observed: the cleaned asset (and only it) is requested.
    _change_gsm8k_raw(graph)
    observe = graph.defs.resolve_job_def("observe_raw_sources")
    assert observe.execute_in_process(instance=graph.instance).success
    result = evaluate(defs=graph.defs, instance=graph.instance, cursor=result.cursor)
    assert _requested(result, cleaned_key("gsm8k_train")) == 1
    assert _requested(result, cleaned_key("math_train")) == 0
    assert _requested(result, tokenized_key("gsm8k_train")) == 0  # waits for its upstream

    # The cleaned file changed: every partition of that source (one file) is requested.
    _materialize(graph, cleaned_key("gsm8k_train"))
    result = evaluate(defs=graph.defs, instance=graph.instance, cursor=result.cursor)
    partitions = graph.instance.get_dynamic_partitions(TOKENIZED_PARTITIONS["gsm8k_train"].name)
    assert _requested(result, tokenized_key("gsm8k_train")) == len(partitions) == 1
    assert _requested(result, tokenized_key("math_train")) == 0
    assert _requested(result, raw_key("gsm8k_train")) == 0


def test_partition_sensor_registers_new_files_and_drops_gone_ones(graph):
    name = TOKENIZED_PARTITIONS["dmmath"].name
    registered = set(graph.instance.get_dynamic_partitions(name))
    cleaned = graph.data / "cleaned" / "dmmath"
    new_file = cleaned / "train-easy__brand_new_module.parquet"
    new_file.write_bytes(next(cleaned.iterdir()).read_bytes())
    gone = sorted(cleaned.iterdir())[0]
    gone_key = f"dmmath__{gone.name}"
    gone.unlink()

    context = dg.build_sensor_context(
        instance=graph.instance, resources={"data_paths": graph.paths}
    )
    result = cleaned_files_sensor(context)
    requests = [r for r in result.dynamic_partitions_requests if r.partitions_def_name == name]
    added = {
        key
        for r in requests
        if isinstance(r, dg.AddDynamicPartitionsRequest)
        for key in r.partition_keys
    }
    deleted = {
        key
        for r in requests
        if isinstance(r, dg.DeleteDynamicPartitionsRequest)
        for key in r.partition_keys
    }
    assert added == {"dmmath__train-easy__brand_new_module.parquet"}
    assert deleted == {gone_key} and gone_key in registered
    assert not (graph.data / "tokenized" / gone_key).exists(), "its owned folder is removed"
    other_sources = [r for r in result.dynamic_partitions_requests if r.partitions_def_name != name]
    assert other_sources == []


def test_freshness_policies_and_automation_are_declared(graph):
    asset_graph = graph.defs.resolve_asset_graph()
    for key in (cleaned_key("gsm8k_train"), tokenized_key("gsm8k_train")):
        node = asset_graph.get(key)
        assert node.freshness_policy is not None
        assert node.automation_condition is not None
        assert node.automation_condition.get_label() == "on_upstream_data_change"
    sampled = asset_graph.get(dg.AssetKey(["sampled", "local"]))
    assert sampled.freshness_policy is not None
    sensors = {sensor.name: sensor for sensor in graph.defs.sensors}
    assert sensors["automation_sensor"].default_status == dg.DefaultSensorStatus.RUNNING
    schedule = graph.defs.resolve_schedule_def("nightly_raw_observation")
    assert schedule.cron_schedule == "0 2 * * *"
