"""kill -9 of a process uploading tokenized folders, at several moments: no folder a reader
takes as complete ever holds other bytes than the finished run's, and the rerun gives them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from support.object_storage import SIDECAR_FILES, upload_tree, write_cleaned_tree

from hrm_assets.common.layout import scan_cleaned_files
from hrm_assets.common.manifest import MANIFEST_FILE
from hrm_assets.common.storage import ObjectRoot, ObjectStore
from hrm_assets.tokenization.remote import (
    RemoteCleaned,
    RemoteTokenized,
    complete_manifest,
    mirror_tokenized,
    tokenize_remote,
)
from hrm_assets.tokenization.tokenize import (
    OWNER_MARKER,
    TokenizeFailure,
    TokenizerSetup,
    tokenize_files,
)

pytestmark = pytest.mark.slow

WRITER = """
import sys
from hrm_assets.common.storage import ObjectRoot
from hrm_assets.tokenization.remote import RemoteCleaned, RemoteTokenized, tokenize_remote
from hrm_assets.tokenization.tokenize import TokenizerSetup

cleaned = RemoteCleaned.scan(ObjectRoot.parse(sys.argv[1]))
out = RemoteTokenized(ObjectRoot.parse(sys.argv[2]))
setup = TokenizerSetup.load(sys.argv[3])
print("started", flush=True)
for result in tokenize_remote(cleaned.files(), cleaned, out, setup, threads=1):
    pass
"""

# Objects under the tokenized root at which the writer is killed (each folder is 8 objects).
KILL_AT = (1, 9, 30, 75)


def reader_view(out: RemoteTokenized) -> dict[str, dict[str, bytes]]:
    """What a reader takes: the complete folders and their files."""
    view = {}
    for name, folder in out.folders().items():
        if complete_manifest(folder, out.store.get_bytes(f"{name}/{MANIFEST_FILE}")):
            view[name] = {file: out.store.get_bytes(f"{name}/{file}") for file in folder}
    return view


def test_kill_during_upload_never_leaves_a_folder_taken_as_complete(
    s3_server, s3_bucket, small_tokenizer_path, tmp_path, monkeypatch
):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    local_cleaned = write_cleaned_tree(tmp_path / "cleaned", copies=10)
    reference_root = tmp_path / "reference"
    setup = TokenizerSetup.load(small_tokenizer_path)
    list(tokenize_files(scan_cleaned_files(local_cleaned), reference_root, setup))
    base = ObjectRoot.parse(f"s3://{s3_bucket}/k")
    cleaned_root, tokenized_root = base.join("cleaned"), base.join("tokenized")
    upload_tree(local_cleaned, ObjectStore(cleaned_root))
    out = RemoteTokenized(tokenized_root)
    client = s3_server.client()

    def written() -> int:
        response = client.list_objects_v2(Bucket=s3_bucket, Prefix="k/tokenized/")
        return response.get("KeyCount", 0)

    def reference(name: str, file: str) -> bytes:
        return (reference_root / name / file).read_bytes()

    killed_mid_run = 0
    environment = {**os.environ, **s3_server.environment(), "HRM_CACHE_DIR": str(tmp_path / "c")}
    for threshold in KILL_AT:
        # Each round starts from scratch for the folders not yet complete: a rerun rewrites.
        writer = subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                str(cleaned_root),
                str(tokenized_root),
                str(small_tokenizer_path),
            ],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 300
        while writer.poll() is None and written() < threshold and time.monotonic() < deadline:
            time.sleep(0.01)
        if writer.poll() is None:
            writer.send_signal(signal.SIGKILL)
            killed_mid_run += 1
        writer.wait()
        for name, files in reader_view(out).items():
            for file, data in files.items():
                if file != "metadata.json":
                    assert data == reference(name, file), (threshold, name, file)
        # Whatever the kill left is ours to rewrite: every folder carries the marker.
        unmarked = [name for name, folder in out.folders().items() if OWNER_MARKER not in folder]
        assert not unmarked, (threshold, unmarked)
        local = mirror_tokenized(tokenized_root, tmp_path / "reader")
        for folder in (p for p in local.iterdir() if p.is_dir()):
            for path in folder.iterdir():
                if path.name != "metadata.json":
                    assert path.read_bytes() == reference(folder.name, path.name)
        # Start the next round with some folders deleted again (their manifest first).
        for name in list(out.folders())[::3]:
            out.remove_owned(name)
    assert killed_mid_run >= 2

    cleaned = RemoteCleaned.scan(cleaned_root)
    results = list(tokenize_remote(cleaned.files(), cleaned, out, setup))
    assert not [r for r in results if isinstance(r, TokenizeFailure)]
    view = reader_view(out)
    assert sorted(view) == sorted(p.name for p in reference_root.iterdir() if p.is_dir())
    for name, files in view.items():
        expected = {p.name for p in (reference_root / name).iterdir()}
        assert set(files) == expected >= set(SIDECAR_FILES)
        for file, data in files.items():
            if file != "metadata.json":
                assert data == reference(name, file)
