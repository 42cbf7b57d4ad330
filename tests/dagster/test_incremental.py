"""Incremental recompute through real Dagster materializations (issue 4).

One demo graph is materialized once per session; each test works on its own copy of the data
root and the SQLite instance, and counts which outputs were rewritten and which partitions ran.
"""

from __future__ import annotations

import json
import shutil

import dagster as dg
import pytest
from support.graph_fixture import EPOCHS, VOCAB, append_gsm8k_row

from hrm_assets.contamination.sidecar import KEYS_FILE, SCAN_FILE
from hrm_assets.definitions import build_definitions
from hrm_assets.defs.common.keys import cleaned_key, raw_key, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.quickstart import materialize_graph

pytestmark = pytest.mark.slow


def _changed(before: dict, after: dict) -> set[str]:
    return {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


def test_second_full_rebuild_rewrites_nothing(graph):
    before = graph.snapshot()
    assert graph.materialize()
    assert _changed(before, graph.snapshot()) == set()
    for name in ("gsm8k_train", "dmmath"):
        assert graph.latest_metadata(cleaned_key(name))["rebuilt"] is False
    key = TOKENIZED_PARTITIONS["gsm8k_train"].name
    for partition in graph.instance.get_dynamic_partitions(key):
        metadata = graph.latest_metadata(tokenized_key("gsm8k_train"), partition)
        assert metadata["skipped"] is True


def test_changing_one_raw_file_rewrites_only_its_outputs(graph):
    before = graph.snapshot()
    append_gsm8k_row(graph)
    assert graph.materialize()
    changed = _changed(before, graph.snapshot())
    upstream = {p for p in changed if not p.startswith("sampled/")}
    assert upstream == {
        "cleaned/gsm8k_train.jsonl",
        "cleaned/.hrm-build/gsm8k_train.json",
        *(
            f"tokenized/gsm8k_train.jsonl/{name}"
            for name in (
                "tokens.npy",
                "inst_start.npy",
                "inst_len.npy",
                "resp_start.npy",
                "resp_len.npy",
                "metadata.json",
                ".hrm-data",
                # The contamination and duplicate sidecars of the same read.
                SCAN_FILE,
                KEYS_FILE,
            )
        ),
    } | (
        {"tokenized/gsm8k_train.jsonl/manifest.json"}
        if any(p.endswith("manifest.json") for p in changed)
        else set()
    )
    assert any(p.startswith("sampled/local/epoch_0/") for p in changed)
    assert graph.latest_metadata(cleaned_key("gsm8k_train"))["rebuilt"] is True
    assert graph.latest_metadata(cleaned_key("math_train"))["rebuilt"] is False
    assert (
        graph.latest_metadata(tokenized_key("gsm8k_train"), "gsm8k_train.jsonl")["skipped"] is False
    )


def test_new_tokenizer_redoes_every_partition(graph):
    before = graph.snapshot()
    runs_before = {
        name: graph.materialization_count(tokenized_key(name)) for name in ("gsm8k_train", "flan")
    }
    assert materialize_graph(graph.defs, graph.instance, VOCAB + 256, EPOCHS, log=lambda m: None)
    changed = _changed(before, graph.snapshot())
    assert "tokenizer/tokenizer.json" in changed
    for name in ("gsm8k_train", "flan"):
        partitions = graph.instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[name].name)
        assert graph.materialization_count(tokenized_key(name)) == runs_before[name] + len(
            partitions
        )
        for partition in partitions:
            metadata = graph.latest_metadata(tokenized_key(name), partition)
            assert metadata["skipped"] is False
            assert f"tokenized/{partition}/tokens.npy" in changed
    assert not any(p.startswith("cleaned/") for p in changed)


def test_removed_cleaned_file_loses_partition_and_owned_folder(graph):
    dmmath_raw = graph.raw / "mathematics_dataset-v1.0"
    victim = sorted(dmmath_raw.rglob("*.txt"))[0]
    safe = f"dmmath__{victim.parent.name}__{victim.stem}.parquet"
    partitions_name = TOKENIZED_PARTITIONS["dmmath"].name
    assert safe in graph.instance.get_dynamic_partitions(partitions_name)
    assert (graph.data / "tokenized" / safe).is_dir()
    foreign = graph.data / "tokenized" / "dmmath__someone_elses_folder.parquet"
    foreign.mkdir()
    (foreign / "tokens.npy").write_bytes(b"not ours")

    victim.unlink()
    clean = graph.defs.resolve_job_def("clean_and_train_tokenizer")
    run_config = {"ops": {"tokenizer": {"config": {"vocab_size": VOCAB}}}}
    assert clean.execute_in_process(instance=graph.instance, run_config=run_config).success

    assert safe not in graph.instance.get_dynamic_partitions(partitions_name)
    assert not (graph.data / "tokenized" / safe).exists()
    assert not (graph.data / "cleaned" / "dmmath" / safe.removeprefix("dmmath__")).exists()
    assert (foreign / "tokens.npy").read_bytes() == b"not ours"

    # A foreign folder in the tokenized root is not a task: sampling refuses it, clearly.
    assert not graph.materialize()
    shutil.rmtree(foreign)
    assert graph.materialize()


def test_every_asset_check_ran_and_passed_on_the_demo(graph):
    check_keys = list(graph.defs.resolve_asset_graph().asset_check_keys)
    assert {key.name for key in check_keys} >= {"rows_valid", "arrays_consistent"}
    unpartitioned = [key for key in check_keys if not key.asset_key.path[0] == "tokenized"]
    for check_key in unpartitioned:
        record = graph.instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [check_key]
        ).get(check_key)
        assert record is not None, f"{check_key.to_user_string()} never ran"
        evaluation = record.event.dagster_event.event_specific_data
        if check_key.name == "contamination":
            # The demo has no evaluation sets (they come from the Hub): each source says so.
            assert evaluation.metadata["checked"].value is False
            assert evaluation.severity == dg.AssetCheckSeverity.WARN
            continue
        assert evaluation.passed, f"{check_key.to_user_string()}: {evaluation.metadata}"


def test_sampled_check_fails_when_the_ram_disk_was_wiped(graph):
    check = dg.AssetCheckKey(dg.AssetKey(["sampled", "local"]), "epochs_consistent")
    check_job = dg.define_asset_job("check_sampled", selection=dg.AssetSelection.checks(check))
    defs = dg.Definitions.merge(graph.defs, dg.Definitions(jobs=[check_job]))

    assert defs.resolve_job_def("check_sampled").execute_in_process(instance=graph.instance).success
    shutil.rmtree(graph.data / "sampled" / "local")  # what a reboot does to /dev/shm
    defs.resolve_job_def("check_sampled").execute_in_process(
        instance=graph.instance, raise_on_error=False
    )

    record = graph.instance.event_log_storage.get_latest_asset_check_execution_by_key([check])[
        check
    ]
    evaluation = record.event.dagster_event.event_specific_data
    assert not evaluation.passed
    assert "missing" in json.dumps(evaluation.metadata["problems"].value)


def test_raw_observation_versions_content_and_reports_unreachable_hub(graph, monkeypatch):
    observe = graph.defs.resolve_job_def("observe_raw_sources")
    assert observe.execute_in_process(instance=graph.instance).success
    first = graph.instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=raw_key("gsm8k_train")), limit=1
    ).records[0]
    version = first.event_log_entry.asset_observation.data_version
    assert version and len(version) == 64

    append_gsm8k_row(graph)
    assert observe.execute_in_process(instance=graph.instance).success
    second = graph.instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=raw_key("gsm8k_train")), limit=1
    ).records[0]
    assert second.event_log_entry.asset_observation.data_version not in (None, version)

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_paths = DataPaths(
        data_root=str(graph.data), raw_root=None, prefix_config_path=graph.paths.prefix_config_path
    )
    hub_observe = build_definitions(hub_paths).resolve_job_def("observe_raw_sources")
    assert hub_observe.execute_in_process(instance=graph.instance).success
    hub = graph.instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=raw_key("gsm8k_train")), limit=1
    ).records[0]
    observation = hub.event_log_entry.asset_observation
    assert observation.data_version == "unreachable"
    assert "problem" in observation.metadata
