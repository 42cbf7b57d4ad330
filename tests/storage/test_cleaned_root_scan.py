"""A cleaned root scanned through the storage-neutral root type: the same tree on disk and in a
bucket gives the same files (the bucket's at their place in the working copy), and two objects
mapping to one tokenized folder are refused as two such files on disk are."""

from __future__ import annotations

import pytest
from support.object_storage import upload_tree, write_cleaned_tree

from hrm_assets.cleaning.source_files import scan_cleaned_root
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.layout import LayoutError
from hrm_assets.common.storage import ObjectRoot, ObjectStore, mirror_path


@pytest.fixture
def cleaned_bucket(s3_bucket, tmp_path, monkeypatch) -> ObjectRoot:
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    return ObjectRoot.parse(f"s3://{s3_bucket}/data/cleaned")


def test_a_tree_on_disk_and_in_a_bucket_scan_to_the_same_files(cleaned_bucket, tmp_path):
    local = write_cleaned_tree(tmp_path / "cleaned")
    upload_tree(local, ObjectStore(cleaned_bucket))
    on_disk = scan_cleaned_root(DataRoot(local))
    in_bucket = scan_cleaned_root(DataRoot(cleaned_bucket))
    assert on_disk.files
    assert [item.relative for item in in_bucket.files] == [item.relative for item in on_disk.files]
    assert {item.root for item in in_bucket.files} == {mirror_path(cleaned_bucket)}
    assert in_bucket.symlinks == []


def test_an_absent_folder_holds_no_cleaned_file(tmp_path):
    scan = scan_cleaned_root(DataRoot(tmp_path / "never_written"))
    assert scan.files == [] and scan.symlinks == []


def test_two_objects_for_one_tokenized_folder_are_refused(cleaned_bucket):
    store = ObjectStore(cleaned_bucket)
    store.put_bytes("a/b.jsonl", b"{}\n")
    store.put_bytes("a__b.jsonl", b"{}\n")
    with pytest.raises(LayoutError, match="both map to the tokenized folder 'a__b.jsonl'"):
        scan_cleaned_root(DataRoot(cleaned_bucket))
