"""Tokenized folders on an S3-compatible server: the local writer's bytes, skips decided from
manifests and stored hashes without reading data, a folder without a valid manifest taken as
absent, only marked folders deleted, and a working copy's sidecars following the bucket's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.object_storage import (
    SIDECAR_FILES,
    data_gets,
    log_length,
    logged_requests,
    upload_tree,
    write_cleaned_tree,
)

from hrm_assets.common.layout import scan_cleaned_files
from hrm_assets.common.storage import ObjectRoot, ObjectStore
from hrm_assets.contamination.sidecar import OBSERVE_ENV, read_sidecar
from hrm_assets.defs.tokenized.partitions import remove_owned_output_at
from hrm_assets.tokenization.remote import (
    RemoteCleaned,
    RemoteTokenized,
    complete_manifest,
    mirror_sidecars,
    mirror_tokenized,
    tokenize_remote,
)
from hrm_assets.tokenization.tokenize import (
    TokenizeFailure,
    TokenizerSetup,
    tokenize_files,
)


def local_reference(tmp_path: Path, tokenizer: Path) -> tuple[Path, Path, list]:
    cleaned = write_cleaned_tree(tmp_path / "cleaned")
    out = tmp_path / "tokenized"
    results = list(tokenize_files(scan_cleaned_files(cleaned), out, TokenizerSetup.load(tokenizer)))
    return cleaned, out, results


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}


def remote_folder_bytes(store: ObjectStore, name: str) -> dict[str, bytes]:
    return {relative.split("/", 1)[1]: store.get_bytes(relative) for relative in store.list(name)}


def without_mtime(data: bytes) -> dict:
    metadata = json.loads(data)
    metadata.pop("source_mtime")
    return metadata


@pytest.fixture
def remote_roots(s3_bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    base = ObjectRoot.parse(f"s3://{s3_bucket}/data")
    return base.join("cleaned"), base.join("tokenized")


def test_remote_folders_hold_the_local_bytes_and_skip_without_reading_data(
    remote_roots, s3_server, s3_bucket, small_tokenizer_path, tmp_path
):
    cleaned_root, tokenized_root = remote_roots
    local_cleaned, local_out, reference = local_reference(tmp_path / "local", small_tokenizer_path)
    upload_tree(local_cleaned, ObjectStore(cleaned_root))
    setup = TokenizerSetup.load(small_tokenizer_path)
    cleaned, out = RemoteCleaned.scan(cleaned_root), RemoteTokenized(tokenized_root)
    results = list(tokenize_remote(cleaned.files(), cleaned, out, setup))
    assert not [r for r in results if isinstance(r, TokenizeFailure)], results
    assert [r.safe_name for r in results] == [r.safe_name for r in reference]
    assert [r.data_version for r in results] == [r.data_version for r in reference]
    assert not any(r.skipped for r in results)
    for result in results:
        expected = folder_bytes(local_out / result.safe_name)
        # The contamination sidecars travel with the folder (docs/CONTAMINATION.md).
        assert set(SIDECAR_FILES) <= expected.keys()
        got = remote_folder_bytes(out.store, result.safe_name)
        assert sorted(got) == sorted(expected)
        for name in expected:
            if name == "metadata.json":
                assert without_mtime(got[name]) == without_mtime(expected[name])
            else:
                assert got[name] == expected[name], (result.safe_name, name)
        # The read-back copy the checks ran on is the bucket's.
        assert folder_bytes(result.output_dir) == got

    start = log_length(s3_server.log)
    again = list(tokenize_remote(cleaned.files(), cleaned, out, setup))
    assert all(r.skipped for r in again)
    assert [r.data_version for r in again] == [r.data_version for r in reference]
    requests = logged_requests(s3_server.log, s3_bucket, start)
    assert data_gets(requests) == []
    assert not [r for r in requests if r[0] in ("PUT", "DELETE")]


def test_a_folder_without_a_valid_manifest_is_absent_and_rewritten(
    remote_roots, small_tokenizer_path, tmp_path
):
    cleaned_root, tokenized_root = remote_roots
    upload_tree(write_cleaned_tree(tmp_path / "cleaned"), ObjectStore(cleaned_root))
    setup = TokenizerSetup.load(small_tokenizer_path)
    cleaned, out = RemoteCleaned.scan(cleaned_root), RemoteTokenized(tokenized_root)
    list(tokenize_remote(cleaned.files(), cleaned, out, setup))
    before = remote_folder_bytes(out.store, "tricky.jsonl")
    out.store.delete(["tricky.jsonl/manifest.json"])
    out.store.put_bytes("growing.jsonl/tokens.npy", b"truncated")
    folders = out.folders()
    assert complete_manifest(folders["tricky.jsonl"], None) is None
    manifest = out.store.get_bytes("growing.jsonl/manifest.json")
    assert complete_manifest(folders["growing.jsonl"], manifest) is None
    assert complete_manifest(
        folders["flan__cot_demo.parquet"],
        out.store.get_bytes("flan__cot_demo.parquet/manifest.json"),
    )
    # A reader's working copy has neither folder.
    local = mirror_tokenized(tokenized_root, tmp_path / "copy")
    assert sorted(p.name for p in local.iterdir() if p.is_dir()) == ["flan__cot_demo.parquet"]
    again = {r.safe_name: r for r in tokenize_remote(cleaned.files(), cleaned, out, setup)}
    assert not again["tricky.jsonl"].skipped and not again["growing.jsonl"].skipped
    assert again["flan__cot_demo.parquet"].skipped
    after = remote_folder_bytes(out.store, "tricky.jsonl")
    assert {k: v for k, v in after.items() if k != "metadata.json"} == {
        k: v for k, v in before.items() if k != "metadata.json"
    }
    local = mirror_tokenized(tokenized_root, tmp_path / "copy")
    assert len([p for p in local.iterdir() if p.is_dir()]) == 3


def test_only_marked_folders_are_deleted(remote_roots, small_tokenizer_path, tmp_path):
    cleaned_root, tokenized_root = remote_roots
    upload_tree(write_cleaned_tree(tmp_path / "cleaned"), ObjectStore(cleaned_root))
    setup = TokenizerSetup.load(small_tokenizer_path)
    cleaned, out = RemoteCleaned.scan(cleaned_root), RemoteTokenized(tokenized_root)
    list(tokenize_remote(cleaned.files(), cleaned, out, setup))
    store = out.store
    store.put_bytes("someone_elses.jsonl/tokens.npy", b"theirs")
    store.put_bytes("notes/readme.txt", b"theirs")
    assert not remove_owned_output_at(tokenized_root, "someone_elses.jsonl")
    assert not remove_owned_output_at(tokenized_root, "notes")
    assert remove_owned_output_at(tokenized_root, "tricky.jsonl")
    assert not remove_owned_output_at(tokenized_root, "tricky.jsonl")
    keys = sorted(store.list())
    assert "someone_elses.jsonl/tokens.npy" in keys and "notes/readme.txt" in keys
    assert not [key for key in keys if key.startswith("tricky.jsonl/")]
    # An unmarked folder in the way of an output is refused, and left as it is.
    store.put_bytes("growing.jsonl/.hrm-data", b"")
    store.delete(["growing.jsonl/.hrm-data"])
    store.put_bytes("tricky.jsonl/foreign.npy", b"theirs")
    results = {r.safe_name: r for r in tokenize_remote(cleaned.files(), cleaned, out, setup)}
    assert isinstance(results["tricky.jsonl"], TokenizeFailure)
    assert "did not write" in results["tricky.jsonl"].message
    assert store.get_bytes("tricky.jsonl/foreign.npy") == b"theirs"


def test_the_working_copy_holds_a_folders_sidecars_only_while_the_bucket_does(
    remote_roots, s3_server, s3_bucket, small_tokenizer_path, tmp_path, monkeypatch
):
    cleaned_root, tokenized_root = remote_roots
    upload_tree(write_cleaned_tree(tmp_path / "cleaned"), ObjectStore(cleaned_root))
    setup = TokenizerSetup.load(small_tokenizer_path)
    cleaned, out = RemoteCleaned.scan(cleaned_root), RemoteTokenized(tokenized_root)
    list(tokenize_remote(cleaned.files(), cleaned, out, setup))
    # A machine that reused the folder: its copy holds the sidecars alone, fetched once.
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "reader_cache"))
    start = log_length(s3_server.log)
    reader = mirror_sidecars(tokenized_root, ["tricky.jsonl"])
    assert sorted(path.name for path in (reader / "tricky.jsonl").iterdir()) == sorted(
        SIDECAR_FILES
    )
    assert read_sidecar(reader / "tricky.jsonl") is not None
    mirror_sidecars(tokenized_root, ["tricky.jsonl"])
    fetched = data_gets(logged_requests(s3_server.log, s3_bucket, start))
    assert sorted(key.rsplit("/", 1)[-1] for key in fetched) == sorted(SIDECAR_FILES)

    # The writer's machine rewrites the folder without sidecars: neither copy keeps the old ones.
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    out.store.delete(["tricky.jsonl/manifest.json"])
    monkeypatch.setenv(OBSERVE_ENV, "0")
    (rewritten,) = [
        r for r in tokenize_remote(cleaned.files(), cleaned, out, setup) if not r.skipped
    ]
    assert rewritten.safe_name == "tricky.jsonl"
    assert read_sidecar(rewritten.output_dir) is None
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "reader_cache"))
    mirror_sidecars(tokenized_root, ["tricky.jsonl"])
    assert read_sidecar(reader / "tricky.jsonl") is None
    assert not list((reader / "tricky.jsonl").iterdir())
