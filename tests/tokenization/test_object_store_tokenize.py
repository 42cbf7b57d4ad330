"""The Rust encoder reading cleaned objects from, and writing tokenized folders to, an S3 server
(moto on loopback, tests/support/s3_server.py) through the ``object_store`` crate.

Every remote folder is compared byte for byte with the folder a local run writes from the same
rows; the order of the requests the server receives shows the manifest deleted first and
written last.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from support.tokenizer_reference import gsm8k_rows, write_jsonl, write_parquet

from hrm_assets import _core
from hrm_assets.cleaning.rows import RowError

FOLDER_FILES = sorted(
    [*_core.ARRAY_FILES, _core.METADATA_FILE, _core.MANIFEST_FILE, _core.OWNER_MARKER]
)
METADATA = json.dumps({"source": "gsm8k_train", "format_version": _core.FORMAT_VERSION})


@pytest.fixture(scope="module")
def rows(real_raw) -> list[dict]:
    return gsm8k_rows(real_raw, "train", 60)


def upload(s3_server, bucket: str, key: str, path: Path) -> str:
    s3_server.client().put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
    return f"s3://{bucket}/{key}"


def remote_folder(s3_server, bucket: str, prefix: str) -> dict[str, bytes]:
    """Every object under ``prefix/``, by its name in the folder."""
    client = s3_server.client()
    return {
        key.removeprefix(f"{prefix}/"): client.get_object(Bucket=bucket, Key=key)["Body"].read()
        for key in s3_server.keys(bucket, f"{prefix}/")
    }


def local_folder(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def tokenize(encoder, jobs, **options) -> list:
    """``tokenize_files`` of ``(input, output)`` pairs (paths or URLs), each with METADATA."""
    return encoder.tokenize_files([(str(i), str(o), METADATA) for i, o in jobs], **options)


def succeeded(results) -> list[dict]:
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


def test_remote_input_and_output_match_a_local_run(encoder, rows, s3_server, s3_bucket, tmp_path):
    jsonl = write_jsonl(tmp_path / "cleaned" / "gsm8k_train.jsonl", rows)
    parquet = write_parquet(tmp_path / "cleaned" / "gsm8k_test.parquet", rows[:25])
    local = succeeded(
        tokenize(
            encoder,
            [
                (jsonl, tmp_path / "local" / jsonl.name),
                (parquet, tmp_path / "local" / parquet.name),
            ],
        )
    )
    jobs = [
        (
            upload(s3_server, s3_bucket, f"cleaned/{path.name}", path),
            f"s3://{s3_bucket}/tokenized/{path.name}",
        )
        for path in (jsonl, parquet)
    ]
    remote = succeeded(tokenize(encoder, jobs))
    assert remote == local
    for path in (jsonl, parquet):
        stored = remote_folder(s3_server, s3_bucket, f"tokenized/{path.name}")
        assert sorted(stored) == FOLDER_FILES
        assert stored == local_folder(tmp_path / "local" / path.name), path.name
        # Every object carries its SHA-256 as user metadata, as hrm_assets.common.storage's do.
        for name, data in stored.items():
            head = s3_server.client().head_object(
                Bucket=s3_bucket, Key=f"tokenized/{path.name}/{name}"
            )
            assert head["Metadata"] == {"sha256": hashlib.sha256(data).hexdigest()}, name
    # Nothing staged is left behind, here or in the bucket.
    assert s3_server.keys(s3_bucket, "tokenized/") == sorted(
        f"tokenized/{path.name}/{name}" for path in (jsonl, parquet) for name in FOLDER_FILES
    )


def test_one_side_remote_either_way(encoder, rows, s3_server, s3_bucket, tmp_path):
    jsonl = write_jsonl(tmp_path / "cleaned" / "a.jsonl", rows[:20])
    succeeded(tokenize(encoder, [(jsonl, tmp_path / "local" / "a.jsonl")]))
    expected = local_folder(tmp_path / "local" / "a.jsonl")

    # Local input, remote folder (tokenize_file, with the endpoint given as an option too).
    stats = encoder.tokenize_file(
        str(jsonl),
        f"s3://{s3_bucket}/out/a.jsonl",
        METADATA,
        storage_options={"aws_endpoint": s3_server.endpoint, "aws_allow_http": "true"},
    )
    assert stats["rows"] == 20
    assert remote_folder(s3_server, s3_bucket, "out/a.jsonl") == expected

    # Remote input, local folder (synced and renamed into place as any local one).
    url = upload(s3_server, s3_bucket, "cleaned/a.jsonl", jsonl)
    succeeded(tokenize(encoder, [(url, tmp_path / "back" / "a.jsonl")]))
    assert local_folder(tmp_path / "back" / "a.jsonl") == expected
    assert sorted(p.name for p in (tmp_path / "back").iterdir()) == ["a.jsonl"]


def test_the_manifest_is_deleted_first_and_written_last(
    encoder, rows, s3_server, s3_bucket, tmp_path
):
    jsonl = write_jsonl(tmp_path / "a.jsonl", rows[:10])
    target = f"s3://{s3_bucket}/t/a.jsonl"
    succeeded(tokenize(encoder, [(jsonl, target)]))
    with s3_server.recording() as requests:
        succeeded(tokenize(encoder, [(jsonl, target)]))
        seen = [(method, path) for method, path in requests() if path.startswith(f"/{s3_bucket}")]
    # object_store deletes through the bulk API: POST /bucket?delete, naming the manifest.
    assert seen[0][0] == "POST" and "delete" in seen[0][1], seen
    assert seen[-1] == ("PUT", f"/{s3_bucket}/t/a.jsonl/manifest.json"), seen
    puts = sorted(path.rsplit("/", 1)[1] for method, path in seen if method == "PUT")
    assert puts == FOLDER_FILES

    # A bad last row fails before anything is touched: the previous folder stays complete.
    before = remote_folder(s3_server, s3_bucket, "t/a.jsonl")
    bad = tmp_path / "bad" / "a.jsonl"
    bad.parent.mkdir()
    bad.write_text(jsonl.read_text() + '{"condition": "", "instruction": 3, "response": ""}\n')
    with s3_server.recording() as requests:
        [error] = tokenize(encoder, [(bad, target)])
        assert not [path for _, path in requests() if path.startswith(f"/{s3_bucket}")]
    assert isinstance(error, RowError)
    assert remote_folder(s3_server, s3_bucket, "t/a.jsonl") == before


def allow_all_but(bucket: str, key: str) -> dict:
    """An IAM policy: everything on S3, except writing ``key`` of ``bucket``."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
            {
                "Effect": "Deny",
                "Action": "s3:PutObject",
                "Resource": f"arn:aws:s3:::{bucket}/{key}",
            },
        ],
    }


def options_for(key_id: str, secret: str) -> dict[str, str]:
    return {"aws_access_key_id": key_id, "aws_secret_access_key": secret}


def test_a_failed_upload_leaves_the_folder_without_manifest(
    encoder, rows, s3_server, s3_bucket, tmp_path
):
    old = write_jsonl(tmp_path / "old" / "a.jsonl", rows[:10])
    new = write_jsonl(tmp_path / "new" / "a.jsonl", rows[10:30])
    target = f"s3://{s3_bucket}/t/a.jsonl"
    succeeded(tokenize(encoder, [(old, target)]))
    # A key allowed everything but writing resp_len.npy: the run deletes the manifest, writes
    # the other objects and is refused that one, after the others were sent.
    key = s3_server.create_access_key(allow_all_but(s3_bucket, "t/a.jsonl/resp_len.npy"))
    with s3_server.authentication_enforced():
        [error] = tokenize(encoder, [(new, target)], storage_options=options_for(*key))
    assert isinstance(error, PermissionError), error
    assert "key 't/a.jsonl/resp_len.npy'" in str(error) and "AccessDenied" in str(error)
    stored = remote_folder(s3_server, s3_bucket, "t/a.jsonl")
    # Absent to readers: no manifest over a mix of new arrays and the old resp_len.npy.
    assert _core.MANIFEST_FILE not in stored
    succeeded(tokenize(encoder, [(new, tmp_path / "local" / "a.jsonl")]))
    assert stored["tokens.npy"] == (tmp_path / "local" / "a.jsonl" / "tokens.npy").read_bytes()


def test_a_key_with_its_own_secret_works_when_the_server_checks_signatures(
    encoder, rows, s3_server, s3_bucket, tmp_path
):
    jsonl = write_jsonl(tmp_path / "a.jsonl", rows[:10])
    key_id, secret = s3_server.create_access_key(allow_all_but(s3_bucket, "nothing"))
    with s3_server.authentication_enforced():
        [ok] = tokenize(
            encoder,
            [(jsonl, f"s3://{s3_bucket}/t/a.jsonl")],
            storage_options=options_for(key_id, secret),
        )
        [wrong] = tokenize(
            encoder,
            [(jsonl, f"s3://{s3_bucket}/t/b.jsonl")],
            storage_options=options_for(key_id, "not-the-secret"),
        )
    assert ok["rows"] == 10
    assert isinstance(wrong, PermissionError), wrong
    assert f"bucket '{s3_bucket}'" in str(wrong) and "SignatureDoesNotMatch" in str(wrong)


def test_refused_credentials_raise_permission_error_naming_bucket_and_key(
    encoder, rows, s3_server, s3_bucket, tmp_path
):
    jsonl = write_jsonl(tmp_path / "a.jsonl", rows[:5])
    url = upload(s3_server, s3_bucket, "cleaned/a.jsonl", jsonl)
    with s3_server.authentication_enforced():
        read, write = tokenize(
            encoder, [(url, tmp_path / "out" / "a.jsonl"), (jsonl, f"s3://{s3_bucket}/t/a.jsonl")]
        )
    assert isinstance(read, PermissionError), read
    assert f"bucket '{s3_bucket}'" in str(read) and "key 'cleaned/a.jsonl'" in str(read)
    assert "InvalidAccessKeyId" in str(read)
    assert read.filename == url
    assert isinstance(write, PermissionError), write
    assert f"bucket '{s3_bucket}'" in str(write) and "t/a.jsonl/manifest.json" in str(write)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_missing_bucket_and_object_raise_file_not_found(
    encoder, rows, s3_server, s3_bucket, tmp_path
):
    jsonl = write_jsonl(tmp_path / "a.jsonl", rows[:5])
    results = tokenize(
        encoder,
        [
            (f"s3://{s3_bucket}/cleaned/absent.jsonl", tmp_path / "out" / "absent.jsonl"),
            (jsonl, "s3://no-such-bucket-hrm/t/a.jsonl"),
            ("s3://no-such-bucket-hrm/cleaned/a.jsonl", tmp_path / "out" / "a.jsonl"),
            (jsonl, tmp_path / "out" / "fine.jsonl"),
        ],
    )
    absent, no_bucket_write, no_bucket_read, fine = results
    assert isinstance(absent, FileNotFoundError), absent
    assert f"s3://{s3_bucket}/cleaned/absent.jsonl" in str(absent)
    for error in (no_bucket_write, no_bucket_read):
        assert isinstance(error, FileNotFoundError), error
        assert "no such bucket 'no-such-bucket-hrm'" in str(error)
    assert fine["rows"] == 5


def test_a_bad_row_in_a_remote_file_names_url_row_and_field(
    encoder, rows, s3_server, s3_bucket, tmp_path
):
    path = write_jsonl(tmp_path / "a.jsonl", [*rows[:3], {**rows[3], "response": None}])
    url = upload(s3_server, s3_bucket, "cleaned/a.jsonl", path)
    [error] = tokenize(encoder, [(url, f"s3://{s3_bucket}/t/a.jsonl")])
    assert isinstance(error, RowError)
    assert str(error) == f"{url}: row 4, field 'response': expected a string, got null"
    assert s3_server.keys(s3_bucket, "t/") == []


def test_storage_options_and_urls_are_checked(encoder, tmp_path):
    with pytest.raises(ValueError, match="aws_bogus"):
        encoder.tokenize_files([], storage_options={"aws_bogus": "1"})
    with pytest.raises(ValueError, match="pathlib"):
        encoder.tokenize_files([("s3:/bucket/a.jsonl", str(tmp_path / "out"), "{}")])


@pytest.mark.slow
def test_a_large_file_goes_up_in_parts_with_the_local_bytes(
    encoder, rows, s3_server, s3_bucket, tmp_path
):
    """~50 MB of JSONL: tokens.npy is larger than a part (16 MiB), so it is a multipart
    upload; prints the time of the local and of the remote run."""
    big = tmp_path / "big.jsonl"
    lines = [json.dumps(row, ensure_ascii=False) + "\n" for row in rows]
    chunk = "".join(lines)
    with open(big, "w", encoding="utf-8") as handle:
        for _ in range(50_000_000 // len(chunk.encode()) + 1):
            handle.write(chunk)
    url = upload(s3_server, s3_bucket, "cleaned/big.jsonl", big)
    started = time.perf_counter()
    succeeded(tokenize(encoder, [(big, tmp_path / "local" / "big.jsonl")]))
    local_seconds = time.perf_counter() - started
    started = time.perf_counter()
    succeeded(tokenize(encoder, [(url, f"s3://{s3_bucket}/t/big.jsonl")]))
    remote_seconds = time.perf_counter() - started
    megabytes = big.stat().st_size / 1e6
    print(f"\n{megabytes:.1f} MB: local {local_seconds:.2f} s, S3 {remote_seconds:.2f} s")
    # A multipart object's ETag ends in "-<parts>".
    head = s3_server.client().head_object(Bucket=s3_bucket, Key="t/big.jsonl/tokens.npy")
    assert head["ETag"].strip('"').rpartition("-")[2].isdigit(), head["ETag"]
    expected = local_folder(tmp_path / "local" / "big.jsonl")
    assert len(expected["tokens.npy"]) > 16 << 20
    assert head["Metadata"] == {"sha256": hashlib.sha256(expected["tokens.npy"]).hexdigest()}
    assert remote_folder(s3_server, s3_bucket, "t/big.jsonl") == expected
