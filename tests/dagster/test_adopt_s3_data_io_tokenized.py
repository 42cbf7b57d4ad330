"""A tokenized root written by data_io's binary (on disk) adopted together with the cleaned
corpus it was made from in object storage (issue 29): its folders are checked against the
objects' content hashes (kept by key, size, ETag and time: a second look reads no object) and
adopted without re-tokenizing; an object added later is tokenized by automation into a folder of
ours beside data_io's; an object that changes under one of data_io's folders fails its
partition in one line; data_io's folders and the objects are never modified. Run on the local
S3 server, with declarative automation evaluated as the daemon evaluates it."""

from __future__ import annotations

import shutil
import sys

import dagster as dg
import pytest
from support.adopted_platform import Platform
from support.cleaned_rows import write_flan_file
from support.project_commands import commands_in
from test_adopt_s3 import objects_state, upload_as_someone_else
from test_adopt_s3_local_tokenized import data_reads, same_as_from_disk, tokenized_from_disk
from test_adopt_tokenized import ADOPTED, GOLDEN, tree_state

from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.storage import ObjectRoot, ObjectStore
from hrm_assets.defs.common.keys import tokenized_key
from hrm_assets.tokenization.versions import OWNER_MARKER

pytestmark = pytest.mark.slow

ADDED = "cot_fsopt_data__task7.parquet"


def test_a_data_io_root_is_adopted_with_s3_cleaned_roots_never_retokenized(
    s3_server, s3_bucket, tmp_path, monkeypatch
):
    cache = tmp_path / "cache"
    monkeypatch.setenv("HRM_CACHE_DIR", str(cache))
    local_copy = tmp_path / "download" / "data"
    shutil.copytree(GOLDEN / "input" / "cleaned", local_copy, symlinks=True)
    corpus = ObjectStore(ObjectRoot.parse(f"s3://{s3_bucket}/corpus"))
    upload_as_someone_else(tmp_path / "download", corpus)
    root = tmp_path / "data_tokenized_bpe_65k"
    shutil.copytree(GOLDEN / "data_io" / "default", root)
    (tmp_path / "bpe").mkdir()
    shutil.copy(GOLDEN / "input" / "tokenizer.json", tmp_path / "bpe" / "tokenizer.json")
    (tmp_path / ".env").write_text(f"HRM_CACHE_DIR=${{HRM_CACHE_DIR:-{cache}}}\n")
    data_ios = tree_state(root)
    run = commands_in(tmp_path)
    cleaned_url = f"s3://{s3_bucket}/corpus/data"

    adopt = (sys.executable, "-m", "hrm_assets.adoption")
    done = run(*adopt, "--cleaned", cleaned_url, "--tokenized", root.name, "--tokenizer", "bpe")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        f"adopted tokenized root {root}: 4 folder(s) recorded as they are, 0 already current, "
        "0 not adopted"
    ) in done.stdout
    # Again: the objects' hashes are kept, so no object's data is read to find them current.
    with s3_server.recording() as requests:
        again = run(*adopt)
        assert data_reads(requests(), s3_bucket) == set()
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 folder(s) recorded as they are, 4 already current" in again.stdout

    # Every run keeps data_io's folders: nothing tokenized, nothing read, nothing written.
    with s3_server.recording() as requests:
        done = run("hrm-materialize-tokenized", *ADOPTED)
        assert data_reads(requests(), s3_bucket) == set()
    assert done.returncode == 0, done.stderr[-3000:]
    for source in ADOPTED:
        line = next(ln for ln in done.stdout.splitlines() if ln.startswith(f"tokenized/{source}:"))
        assert line.endswith("): 0 tokenized, 1 unchanged"), line
    assert tree_state(root) == data_ios

    # Automation finds the adopted partitions current, as recorded in the same instance.
    platform = Platform(tmp_path, [cleaned_url], tmp_path / "bpe", tokenized_at=str(root))
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        platform.instance = instance
        platform.sensor_tick()
        assert platform.automation_tick() == {}
        for source, name in ADOPTED.items():
            event = instance.get_latest_materialization_event(tokenized_key(source))
            metadata = event.asset_materialization.metadata
            assert metadata["adopted"].value is True
            assert metadata["arrays"].value == {
                path.name: {"size": path.stat().st_size, "sha256": file_sha256(path)}
                for path in sorted((root / name).glob("*.npy"))
            }

        # An object added later: automation tokenizes it alone, into a folder of ours.
        write_flan_file(
            local_copy / "flan" / ADDED,
            [{"condition": "cot", "instruction": "2 + 2?", "response": "4"}] * 3,
        )
        corpus.fs.pipe_file(
            f"{corpus.root.path}/data/flan/{ADDED}", (local_copy / "flan" / ADDED).read_bytes()
        )
        flan = dg.AssetRecordsFilter(asset_key=tokenized_key("flan"))
        last_before = instance.fetch_materializations(flan, limit=1).records[0].storage_id
        platform.sensor_tick()
        requested = platform.automation_tick()
        assert requested == {tokenized_key("flan"): sorted([ADOPTED["flan"], f"flan__{ADDED}"])}
        newer = [
            record.partition_key
            for record in instance.fetch_materializations(flan, limit=100).records
            if record.storage_id > last_before
        ]
        assert newer == [f"flan__{ADDED}"]
    made = root / f"flan__{ADDED}"
    assert (made / OWNER_MARKER).is_file()
    only_added = tmp_path / "added" / "data"
    (only_added / "flan").mkdir(parents=True)
    shutil.copy(local_copy / "flan" / ADDED, only_added / "flan" / ADDED)
    reference = tokenized_from_disk(
        [only_added], tmp_path / "from-disk", tmp_path / "bpe" / "tokenizer.json"
    )
    same_as_from_disk(made, reference / made.name)
    after = tree_state(root)
    assert {path: after[path] for path in data_ios} == data_ios, "data_io's files untouched"

    # An object changed under one of data_io's folders: its partition fails, naming the
    # folder; data_io's folder stays as it was.
    rows = (local_copy / "gsm8k_train.jsonl").read_bytes().splitlines(keepends=True)
    corpus.fs.pipe_file(f"{corpus.root.path}/data/gsm8k_train.jsonl", b"".join(rows[:2]))
    users = objects_state(corpus)
    done = run("hrm-materialize-tokenized", "gsm8k_train")
    assert done.returncode == 1
    assert "tokenized/gsm8k_train: 1 partition(s) FAILED" in done.stdout
    output = done.stdout + done.stderr
    assert f"{root / ADOPTED['gsm8k_train']} was written by another tool" in output
    assert "move it away to have it tokenized" in output
    after = tree_state(root)
    assert {path: after[path] for path in data_ios} == data_ios
    assert objects_state(corpus) == users
    assert not (tmp_path / "ours" / "cleaned").exists()
