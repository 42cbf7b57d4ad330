"""``make demo``'s pipeline (``python -m hrm_assets.quickstart``) with every root in a bucket
of the loopback S3 server (HRM_DATA_ROOT=s3://bucket/prefix; the demo raw corpus uploaded to
``<prefix>/demo_raw``), against the same pipeline on local disk: the same bytes in every output,
the same data versions, and a second run that downloads nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from support.object_storage import data_gets, log_length, logged_requests

from hrm_assets.common.storage import ObjectRoot, ObjectStore

pytestmark = pytest.mark.slow

VOCAB, EPOCHS = "1024", "2"
DATA_VERSION_TAG = "dagster/data_version"


def quickstart(work: Path, data_root: str, env: dict[str, str]) -> None:
    home = work / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    nodes = work / "nodes.yaml"
    nodes.write_text(f"nodes:\n  - name: local\n    output_path: {work / 'sampled'}\n")
    environment = {
        **os.environ,
        **env,
        "DAGSTER_HOME": str(home),
        "HRM_DATA_ROOT": data_root,
        "HRM_TRAINING_NODES": str(nodes),
        "HRM_CACHE_DIR": str(work / "cache"),
    }
    environment.pop("HRM_RAW_ROOT", None)
    result = subprocess.run(
        [sys.executable, "-m", "hrm_assets.quickstart", "--vocab-size", VOCAB, "--epochs", EPOCHS],
        cwd=work,
        env=environment,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-4000:]


def normalized(relative: str, data: bytes) -> bytes | dict | list:
    """What must match between the runs: bytes, except the fields that record a path or a
    time (``tokenizer_path``, ``source_mtime``), and so in a sampled folder the size and hash
    of its ``metadata.json`` (which embeds ``tokenizer_info.tokenizer_path``) where the
    manifest and the data card list them."""
    name = relative.rsplit("/", 1)[-1]
    if name in ("metadata.json", "tokenizer_info.json"):
        value = json.loads(data)
        value.pop("source_mtime", None)
        value.pop("tokenizer_path", None)
        if isinstance(value.get("tokenizer_info"), dict):
            value["tokenizer_info"].pop("tokenizer_path", None)
        return value
    if relative in ("manifest.json", "datacard.json"):
        value = json.loads(data)
        files = value["files"] if relative == "manifest.json" else value["outputs"]["files"]
        files.pop("metadata.json")
        if relative == "datacard.json":
            value["outputs"].pop("manifest_sha256")
        return value
    if relative == "DATACARD.md":
        return [
            line
            for line in data.decode().splitlines()
            if "`metadata.json`" not in line and not line.startswith("As listed in `manifest")
        ]
    return data


def local_tree(root: Path) -> dict[str, bytes | dict]:
    return {
        path.relative_to(root).as_posix(): normalized(
            path.relative_to(root).as_posix(), path.read_bytes()
        )
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.name.endswith(".lock")
    }


def data_versions(home: Path) -> dict[str, str]:
    """Every asset's (and tokenized partition's) latest recorded data version."""
    os.environ["DAGSTER_HOME"] = str(home)
    with dg.DagsterInstance.get() as instance:
        found = {}
        for key in instance.get_asset_keys():
            name = key.to_user_string()
            if name.startswith("tokenized/"):
                tags = instance.event_log_storage.get_latest_tags_by_partition(
                    key, dg.DagsterEventType.ASSET_MATERIALIZATION, [DATA_VERSION_TAG]
                )
                for partition, values in tags.items():
                    found[f"{name}[{partition}]"] = values[DATA_VERSION_TAG]
            elif name.startswith(("cleaned/", "tokenizer")):
                event = instance.get_latest_materialization_event(key)
                found[name] = event.asset_materialization.tags[DATA_VERSION_TAG]
    return found


def test_the_demo_pipeline_on_object_storage(s3_server, s3_bucket, tmp_path, monkeypatch):
    local_work, remote_work = tmp_path / "local", tmp_path / "remote"
    # A bucket's tokenized folders carry their contamination sidecars as folders on disk do
    # (docs/CONTAMINATION.md): every output must be the same.
    quickstart(local_work, str(local_work / "data"), {})
    url = f"s3://{s3_bucket}/hrm"
    quickstart(remote_work, url, s3_server.environment())

    store = ObjectStore(ObjectRoot.parse(url))
    for stage in ("cleaned", "tokenizer", "tokenized"):
        expected = {
            relative: value
            for relative, value in local_tree(local_work / "data" / stage).items()
            if not relative.startswith(".hrm-build/")
        }
        listing = [
            relative
            for relative in store.list(stage)
            if not relative.startswith(f"{stage}/.hrm-build/")
        ]
        got = {
            relative.split("/", 1)[1]: normalized(relative, store.get_bytes(relative))
            for relative in listing
        }
        assert sorted(got) == sorted(expected), stage
        assert [name for name in expected if got[name] != expected[name]] == [], stage
    # The epochs on the training node: same arrays, tokenizer and figures.
    local_epochs, remote_epochs = (
        local_tree(local_work / "sampled"),
        local_tree(remote_work / "sampled"),
    )
    assert sorted(remote_epochs) == sorted(local_epochs)
    assert [name for name in local_epochs if remote_epochs[name] != local_epochs[name]] == []
    monkeypatch.setenv("DAGSTER_HOME", str(local_work / "dagster_home"))
    assert data_versions(remote_work / "dagster_home") == data_versions(local_work / "dagster_home")

    # Nothing changed: the second run reads listings, HEADs and small JSON objects only.
    start = log_length(s3_server.log)
    before = sorted(store.list())
    quickstart(remote_work, url, s3_server.environment())
    requests = logged_requests(s3_server.log, s3_bucket, start)
    assert data_gets(requests) == []
    assert [r for r in requests if r[0] in ("PUT", "DELETE", "POST")] == []
    assert sorted(store.list()) == before
