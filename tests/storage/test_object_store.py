"""The object-storage layer (hrm_assets.common.storage, object_mirror) against a real
S3-compatible server on loopback: what a write stores, what a listing and a HEAD say, errors
that name the bucket, and a working copy refreshed by ETag."""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from pathlib import Path

import pytest

from hrm_assets.common.hashing import tree_sha256
from hrm_assets.common.object_mirror import mirror_tree
from hrm_assets.common.storage import (
    ObjectRoot,
    ObjectStore,
    is_url,
    parse_location,
    remote_tree_sha256,
    storage_options,
)


def test_roots_parse_and_join():
    root = ObjectRoot.parse("s3://bucket/some/prefix/")
    assert (root.url, root.bucket, root.prefix) == (
        "s3://bucket/some/prefix",
        "bucket",
        "some/prefix",
    )
    assert root.join("cleaned", "a.jsonl").url == "s3://bucket/some/prefix/cleaned/a.jsonl"
    assert (root / "x").key("y") == "some/prefix/x/y"
    assert ObjectRoot.parse("s3://bucket").key("k") == "k"
    assert isinstance(parse_location("relative/dir"), Path)
    assert parse_location("relative/dir").is_absolute()
    assert not is_url("/tmp/x") and is_url("gs://b/p")
    with pytest.raises(ValueError, match="expected <protocol>"):
        ObjectRoot.parse("ftp://host/x")


def test_put_stores_sha256_and_head_reads_it(s3_bucket, tmp_path):
    store = ObjectStore(ObjectRoot.parse(f"s3://{s3_bucket}/p"))
    digest = store.put_bytes("a/b.json", b"{}")
    assert digest == hashlib.sha256(b"{}").hexdigest()
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(300_000))
    store.put_file("c.bin", source)
    head = store.head("c.bin")
    assert head.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert head.size == 300_000
    assert store.head("absent") is None and store.get_bytes("absent") is None
    listing = store.list()
    assert sorted(listing) == ["a/b.json", "c.bin"]
    assert listing["c.bin"].etag == head.etag
    assert store.list("nothing-here") == {}


def test_remote_tree_hash_equals_the_local_one(s3_bucket, tmp_path):
    local = tmp_path / "tree"
    (local / "sub").mkdir(parents=True)
    (local / "a.jsonl").write_text("one\n")
    (local / "sub" / "b.parquet").write_bytes(b"two")
    store = ObjectStore(ObjectRoot.parse(f"s3://{s3_bucket}/tree"))
    for path in sorted(local.rglob("*")):
        if path.is_file():
            store.put_file(path.relative_to(local).as_posix(), path)
    heads = store.head_many(store.list())
    assert remote_tree_sha256(heads.values()) == tree_sha256(local)


def test_a_missing_bucket_is_named(s3_server, monkeypatch):
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    store = ObjectStore(ObjectRoot.parse("s3://no-such-bucket-hrm/prefix"))
    with pytest.raises(FileNotFoundError, match="s3://no-such-bucket-hrm: no such bucket"):
        store.check_access()
    with pytest.raises(FileNotFoundError, match="s3://no-such-bucket-hrm: no such bucket"):
        store.list()
    with pytest.raises(FileNotFoundError, match="no-such-bucket-hrm"):
        store.put_bytes("x", b"1")


def test_storage_options_follow_the_standard_chain(s3_server, monkeypatch, tmp_path):
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    options = storage_options(ObjectRoot.parse("s3://b/p"))
    assert options["aws_access_key_id"] == s3_server.environment()["AWS_ACCESS_KEY_ID"]
    assert options["aws_secret_access_key"] == s3_server.environment()["AWS_SECRET_ACCESS_KEY"]
    assert options["aws_endpoint"].rstrip("/") == s3_server.endpoint
    assert options["aws_allow_http"] == "true"
    assert options["aws_region"] == "us-east-1"
    # From a profile in the standard files instead of the environment.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    credentials = tmp_path / "credentials"
    credentials.write_text("[other]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = s\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_PROFILE", "other")
    assert storage_options(ObjectRoot.parse("s3://b/p"))["aws_access_key_id"] == "AKIDPROFILE"


def test_the_working_copy_downloads_only_changed_objects(s3_bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    root = ObjectRoot.parse(f"s3://{s3_bucket}/raw")
    store = ObjectStore(root)
    store.put_bytes("x/a.jsonl", b"a\n")
    store.put_bytes("x/b.jsonl", b"b\n")
    first = mirror_tree(root)
    assert sorted(first.downloaded) == ["x/a.jsonl", "x/b.jsonl"]
    assert (first.local / "x" / "a.jsonl").read_bytes() == b"a\n"
    assert mirror_tree(root).downloaded == []
    store.put_bytes("x/b.jsonl", b"B\n")
    store.delete(["x/a.jsonl"])
    third = mirror_tree(root)
    assert (third.downloaded, third.removed) == (["x/b.jsonl"], ["x/a.jsonl"])
    assert not (third.local / "x" / "a.jsonl").exists()
    assert (third.local / "x" / "b.jsonl").read_bytes() == b"B\n"


def test_downloads_are_as_readable_as_any_file_written_here(s3_bucket, tmp_path, monkeypatch):
    """A working copy's files get the modes of the project's own temporary files (0666 masked
    by the umask, not mkstemp's 0600): a training job running as another user reads the
    tokenizer the sampler ships from it. No temporary is left beside them."""
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    root = ObjectRoot.parse(f"s3://{s3_bucket}/tokenizer")
    ObjectStore(root).put_bytes("tokenizer.json", b"{}")
    old_umask = os.umask(0o022)
    try:
        local = mirror_tree(root).local
    finally:
        os.umask(old_umask)
    assert (local / "tokenizer.json").stat().st_mode & 0o777 == 0o644
    assert sorted(path.name for path in local.iterdir()) == ["tokenizer.json"]


@pytest.fixture(scope="module")
def authenticating_server(tmp_path_factory):
    """A second server that checks signatures: an IAM user's key is created while it does not
    yet, then every request is authenticated (moto's reset-auth)."""
    import boto3
    from support.s3_server import REGION, start_s3_server

    servers = start_s3_server(tmp_path_factory.mktemp("s3-auth"))
    server = next(servers)
    anonymous = dict(
        endpoint_url=server.endpoint,
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
        region_name=REGION,
    )
    iam = boto3.client("iam", **anonymous)
    iam.create_user(UserName="hrm")
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
    }
    iam.put_user_policy(UserName="hrm", PolicyName="all", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="hrm")["AccessKey"]
    boto3.client("s3", **anonymous).create_bucket(Bucket="guarded")
    request = urllib.request.Request(
        f"{server.endpoint}/moto-api/reset-auth",
        b"0",
        {"Content-Type": "text/plain"},
        method="POST",
    )
    urllib.request.urlopen(request).close()
    yield server, key["AccessKeyId"], key["SecretAccessKey"]
    servers.close()


def test_a_wrong_credential_is_named_with_the_bucket(authenticating_server, monkeypatch):
    server, key_id, secret = authenticating_server
    for name, value in server.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    store = ObjectStore(ObjectRoot.parse("s3://guarded/p"))
    store.check_access()
    store.put_bytes("ok.json", b"{}")  # the right credential works
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
    wrong = ObjectStore(ObjectRoot.parse("s3://guarded/p"))
    with pytest.raises(PermissionError, match="s3://guarded: access denied"):
        wrong.check_access()
    with pytest.raises(PermissionError, match="s3://guarded: access denied"):
        wrong.list()
    with pytest.raises(PermissionError, match="s3://guarded"):
        wrong.put_bytes("x.json", b"{}")
