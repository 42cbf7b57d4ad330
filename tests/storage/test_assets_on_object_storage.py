"""The Dagster assets with their roots in a bucket, in process: a source cleaned into the
bucket (objects with their SHA-256, a build record, partitions registered), its rebuild skipped
from HEADs, and a missing bucket failing the step with its name."""

from __future__ import annotations

import dagster as dg
import pytest

from hrm_assets.cleaning.sources import get_source
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.settings import default_prefix_config_path
from hrm_assets.common.storage import ObjectRoot, ObjectStore
from hrm_assets.defs.cleaned.assets import build_cleaned_asset
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.demo import write_demo_corpus

SOURCE = "gsm8k_train"


def clean(data_root: str, raw_root, instance) -> dg.ExecuteInProcessResult:
    paths = DataPaths(
        data_root=data_root,
        raw_root=str(raw_root),
        prefix_config_path=str(default_prefix_config_path()),
    )
    return dg.materialize(
        [build_cleaned_asset(get_source(SOURCE))],
        resources={"data_paths": paths},
        instance=instance,
        raise_on_error=False,
    )


@pytest.fixture
def raw_root(tmp_path):
    root = tmp_path / "raw"
    write_demo_corpus(root, [SOURCE])
    return root


def test_a_source_cleaned_into_a_bucket(s3_bucket, raw_root, tmp_path, monkeypatch):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    local = tmp_path / "local"
    with dg.instance_for_test() as instance:
        assert clean(str(local), raw_root, instance).success
        local_version = instance.get_latest_materialization_event(
            dg.AssetKey(["cleaned", SOURCE])
        ).asset_materialization.tags["dagster/data_version"]
    url = f"s3://{s3_bucket}/d"
    with dg.instance_for_test() as instance:
        first = clean(url, raw_root, instance)
        assert first.success
        store = ObjectStore(ObjectRoot.parse(url).join("cleaned"))
        listing = store.list()
        assert sorted(listing) == [".hrm-build/gsm8k_train.json", "gsm8k_train.jsonl"]
        head = store.head("gsm8k_train.jsonl")
        assert head.sha256 == file_sha256(local / "cleaned" / "gsm8k_train.jsonl")
        assert (
            store.get_bytes("gsm8k_train.jsonl")
            == (local / "cleaned" / "gsm8k_train.jsonl").read_bytes()
        )
        (materialization,) = first.asset_materializations_for_node("cleaned__gsm8k_train")
        assert materialization.tags["dagster/data_version"] == local_version
        assert materialization.metadata["rebuilt"].value is True
        partitions = instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[SOURCE].name)
        assert partitions == ["gsm8k_train.jsonl"]
        etag = head.etag
        second = clean(url, raw_root, instance)
        (materialization,) = second.asset_materializations_for_node("cleaned__gsm8k_train")
        assert materialization.metadata["rebuilt"].value is False
        assert materialization.tags["dagster/data_version"] == local_version
        assert store.head("gsm8k_train.jsonl").etag == etag


def test_a_missing_bucket_fails_the_step_naming_it(s3_server, raw_root, tmp_path, monkeypatch):
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    with dg.instance_for_test() as instance:
        result = clean("s3://hrm-no-such-bucket/d", raw_root, instance)
    assert not result.success
    (failure,) = [event for event in result.all_events if event.is_step_failure]
    message = failure.step_failure_data.error.to_string()
    assert "s3://hrm-no-such-bucket: no such bucket" in message
