"""A cleaned corpus in object storage adopted in place (issue 29): ``s3://`` roots in
``HRM_ADOPT_CLEANED`` laid out as data_io writes its two folders, uploaded by someone else (no
SHA-256 of ours on the objects). The cleaned assets are recorded with content hashes of the
objects' bytes, a partition appears per object, automation tokenizes them into a tokenized root
in the bucket (the Rust core reads each object where it is), an object added later tokenizes
alone, and the adopted objects are never written; adopted folders are tokenized into a
bucket likewise. Run on the local S3 server (a tokenized root on disk for an s3:// corpus:
test_adopt_s3_local_tokenized.py)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
from support.adopted_platform import Platform
from support.cleaned_rows import write_flan_file
from test_adopt_cleaned import FLAN_KEYS, write_data_io_layout

from hrm_assets.adoption import objects as adopted_objects
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.hashing import entries_sha256
from hrm_assets.common.storage import ObjectRoot, ObjectStore
from hrm_assets.defs.cleaned.adopted import plan_adoption
from hrm_assets.defs.common.keys import cleaned_key, tokenized_key
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

pytestmark = pytest.mark.slow


def upload_as_someone_else(local, store: ObjectStore) -> None:
    """Plain PUTs, as ``aws s3 sync`` makes them: no ``x-amz-meta-sha256``."""
    for path in sorted(local.rglob("*")):
        if path.is_file():
            store.fs.pipe_file(
                f"{store.root.path}/{path.relative_to(local).as_posix()}", path.read_bytes()
            )


def objects_state(store: ObjectStore) -> dict[str, tuple[int, str, bytes]]:
    return {
        relative: (info.size, info.etag, store.get_bytes(relative))
        for relative, info in store.list().items()
    }


def folders_state(store: ObjectStore) -> dict[str, dict[str, str]]:
    """ETag of every object of every tokenized folder, by folder."""
    found: dict[str, dict[str, str]] = {}
    for relative, info in store.list().items():
        folder, _, name = relative.partition("/")
        if name:
            found.setdefault(folder, {})[name] = info.etag
    return found


@dataclass
class AdoptedByCommand:
    """A data_io download uploaded to ``s3://<bucket>/corpus`` by another tool and adopted by
    ``python -m hrm_assets.adoption --cleaned s3://...``, as docs/COMING_FROM_DATA_IO.md says."""

    corpus: ObjectStore
    users: dict[str, tuple[int, str, bytes]]  # the objects as the user left them
    run: Callable[..., subprocess.CompletedProcess]  # a command run in the project folder
    adopted: subprocess.CompletedProcess


def adopt_from_the_command_line(
    folder: Path, bucket: str, real_raw: Path, tokenizer_json: Path, tokenized_root: str
) -> AdoptedByCommand:
    """The download in ``folder/download`` and in the bucket, data_io's tokenizer in
    ``folder/bpe``, ``tokenized_root`` in ``folder/.env``, and the adoption command run."""
    from support.project_commands import commands_in

    write_data_io_layout(folder / "download", real_raw)
    corpus = ObjectStore(ObjectRoot.parse(f"s3://{bucket}/corpus"))
    upload_as_someone_else(folder / "download", corpus)
    users = objects_state(corpus)
    (folder / "bpe").mkdir()
    (folder / "bpe" / "tokenizer.json").write_bytes(tokenizer_json.read_bytes())
    (folder / ".env").write_text(
        f"HRM_TOKENIZED_ROOT=${{HRM_TOKENIZED_ROOT:-{tokenized_root}}}\n"
        f"HRM_CACHE_DIR=${{HRM_CACHE_DIR:-{folder / 'cache'}}}\n"
    )
    run = commands_in(folder)
    roots = f"s3://{bucket}/corpus/data:s3://{bucket}/corpus/data_clustered"
    adopted = run(sys.executable, "-m", "hrm_assets.adoption", "--cleaned", roots,
                  "--tokenizer", "bpe")  # fmt: skip
    assert adopted.returncode == 0, adopted.stderr[-3000:]
    assert "4 adopted cleaned file(s); flan: +2 -0; gsm8k_train: +1 -0" in adopted.stdout
    return AdoptedByCommand(corpus, users, run, adopted)


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """The objects whose bytes were read to be hashed, in order."""
    reads: list[str] = []
    original = adopted_objects.object_sha256

    def counting(store, relative):
        reads.append(relative)
        return original(store, relative)

    monkeypatch.setattr(adopted_objects, "object_sha256", counting)
    return reads


def test_an_s3_corpus_is_adopted_in_place_and_tokenized_by_automation(
    s3_bucket, tmp_path, real_raw, small_tokenizer_path, monkeypatch, hashed
):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    layout = tmp_path / "download"
    write_data_io_layout(layout, real_raw)
    corpus = ObjectStore(ObjectRoot.parse(f"s3://{s3_bucket}/corpus"))
    upload_as_someone_else(layout, corpus)
    users = objects_state(corpus)
    assert all(corpus.head(relative).sha256 is None for relative in users)
    tokenizer_dir = tmp_path / "bpe"
    tokenizer_dir.mkdir()
    (tokenizer_dir / "tokenizer.json").write_bytes(small_tokenizer_path.read_bytes())
    roots = [f"s3://{s3_bucket}/corpus/data", f"s3://{s3_bucket}/corpus/data_clustered"]
    tokenized_url = f"s3://{s3_bucket}/tokenized"
    platform = Platform(tmp_path, roots, tokenizer_dir, tokenized_at=tokenized_url)
    instance = platform.instance

    platform.sensor_tick()
    assert instance.get_dynamic_partitions(TOKENIZED_PARTITIONS["flan"].name) == FLAN_KEYS
    flan = instance.get_latest_materialization_event(cleaned_key("flan")).asset_materialization
    # The data version hashes the objects' bytes (not their ETags), as for files on disk.
    entries = [
        (f"flan/{key.removeprefix('flan__')}", len(data), hashlib.sha256(data).hexdigest())
        for key in FLAN_KEYS
        for data in [(layout / "data_clustered" / "flan" / key.removeprefix("flan__")).read_bytes()]
    ]
    assert flan.tags["dagster/data_version"] == entries_sha256(entries)
    files = flan.metadata["files"].value.records
    assert [record.data["file"] for record in files] == [
        f"{roots[1]}/flan/{key.removeprefix('flan__')}" for key in FLAN_KEYS
    ]
    for name in SOURCES:
        assert instance.get_latest_materialization_event(cleaned_key(name)) is not None
    warnings = plan_adoption(instance, platform.paths).warnings()
    assert any(f"{roots[0]}/mystery_corpus.jsonl" in line for line in warnings)
    first_pass = len(hashed)
    assert first_pass == 4  # each object of a known source, read once (not the mystery one)

    requested = platform.automation_tick()
    assert requested == {
        tokenized_key("flan"): FLAN_KEYS,
        tokenized_key("gsm8k_train"): ["gsm8k_train.jsonl"],
        tokenized_key("math_train"): ["math_train.jsonl"],
    }
    out = ObjectStore(ObjectRoot.parse(tokenized_url))
    folders = folders_state(out)
    assert sorted(folders) == sorted([*FLAN_KEYS, "gsm8k_train.jsonl", "math_train.jsonl"])
    assert all("manifest.json" in names and "tokens.npy" in names for names in folders.values())
    platform.sensor_tick()
    assert platform.automation_tick() == {}, "nothing changed: nothing requested"
    # Unchanged objects (same key, size, ETag and time) are never read again to be hashed.
    assert len(hashed) == first_pass

    # An object added later: only it is hashed and tokenized.
    added = "cot_fsopt_data__task7.parquet"
    write_flan_file(
        tmp_path / "added.parquet",
        [{"condition": "cot", "instruction": "2 + 2?", "response": "4"}] * 3,
    )
    corpus.fs.pipe_file(
        f"{corpus.root.path}/data_clustered/flan/{added}",
        (tmp_path / "added.parquet").read_bytes(),
    )
    users = objects_state(corpus)
    flan_records = dg.AssetRecordsFilter(asset_key=tokenized_key("flan"))
    last_before = instance.fetch_materializations(flan_records, limit=1).records[0].storage_id
    platform.sensor_tick()
    assert hashed[first_pass:] == [f"flan/{added}"]
    assert platform.automation_tick() == {tokenized_key("flan"): [*FLAN_KEYS, f"flan__{added}"]}
    after = folders_state(out)
    assert {name: after[name] for name in folders} == folders, "the other folders are kept"
    assert sorted(set(after) - set(folders)) == [f"flan__{added}"]
    records = instance.fetch_materializations(flan_records, limit=100).records
    newer = [r for r in records if r.storage_id > last_before]
    assert [r.partition_key for r in newer] == [f"flan__{added}"]

    # An object replaced by its owner: only it is read again and tokenized again.
    before = folders_state(out)
    replaced = (layout / "data" / "math_train.jsonl").read_bytes().splitlines(keepends=True)
    corpus.fs.pipe_file(f"{corpus.root.path}/data/math_train.jsonl", b"".join(replaced[:4]))
    users = objects_state(corpus)
    read_before = len(hashed)
    platform.sensor_tick()
    assert hashed[read_before:] == ["math_train.jsonl"]
    assert platform.automation_tick() == {tokenized_key("math_train"): ["math_train.jsonl"]}
    after = folders_state(out)
    changed = {name for name in after if after[name] != before.get(name)}
    assert changed == {"math_train.jsonl"}

    # The adopted objects were never written.
    assert objects_state(corpus) == users


def test_adopted_folders_are_tokenized_by_automation_into_a_bucket(
    s3_bucket, tmp_path, real_raw, small_tokenizer_path, monkeypatch
):
    """Adopted folders with a tokenized root in object storage: the Rust core reads each file
    from disk and publishes its folder in the bucket, with the bytes tokenizing it on disk
    gives (its sidecars too, as on disk); a file added later is the only
    one tokenized, and the adopted files are never written."""
    from support.adopted_platform import tree_state

    from hrm_assets.common.layout import CleanedFile
    from hrm_assets.tokenization.chunks import tokenize_files

    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    layout = tmp_path / "download"
    roots = write_data_io_layout(layout, real_raw)
    (layout / "data" / "mystery_corpus.jsonl").unlink()
    users = tree_state(layout)
    tokenizer_dir = tmp_path / "bpe"
    tokenizer_dir.mkdir()
    (tokenizer_dir / "tokenizer.json").write_bytes(small_tokenizer_path.read_bytes())
    tokenized_url = f"s3://{s3_bucket}/tokenized"
    platform = Platform(tmp_path, roots, tokenizer_dir, tokenized_at=tokenized_url)
    assert plan_adoption(platform.instance, platform.paths).warnings() == []

    platform.sensor_tick()
    assert platform.automation_tick() == {
        tokenized_key("flan"): FLAN_KEYS,
        tokenized_key("gsm8k_train"): ["gsm8k_train.jsonl"],
        tokenized_key("math_train"): ["math_train.jsonl"],
    }
    out = ObjectStore(ObjectRoot.parse(tokenized_url))
    folders = folders_state(out)
    names = sorted([*FLAN_KEYS, "gsm8k_train.jsonl", "math_train.jsonl"])
    assert sorted(folders) == names

    def same_as_on_disk(name: str) -> None:
        files = [
            CleanedFile(path=path, root=root)
            for root in roots
            for path in sorted(root.rglob("*"))
            if path.is_file() and CleanedFile(path=path, root=root).safe_name == name
        ]
        (outcome,) = tokenize_files(files, tmp_path / "on-disk", tokenizer_dir / "tokenizer.json")
        for file in ["manifest.json", "tokens.npy", "inst_start.npy", "resp_len.npy"]:
            expected = (outcome.output_dir / file).read_bytes()
            assert out.get_bytes(f"{name}/{file}") == expected, f"{name}/{file}"

    for name in names:
        same_as_on_disk(name)
    platform.sensor_tick()
    assert platform.automation_tick() == {}, "nothing changed: nothing requested"
    assert folders_state(out) == folders

    added = "cot_fsopt_data__task7.parquet"
    write_flan_file(
        layout / "data_clustered" / "flan" / added,
        [{"condition": "cot", "instruction": "2 + 2?", "response": "4"}] * 3,
    )
    users = tree_state(layout)
    platform.sensor_tick()
    assert platform.automation_tick() == {tokenized_key("flan"): [*FLAN_KEYS, f"flan__{added}"]}
    after = folders_state(out)
    assert {name: after[name] for name in folders} == folders, "the other folders are kept"
    assert sorted(set(after) - set(folders)) == [f"flan__{added}"]
    same_as_on_disk(f"flan__{added}")
    assert tree_state(layout) == users


def test_folders_and_s3_roots_together_are_refused():
    from hrm_assets.common.settings import adopted_cleaned_roots

    with pytest.raises(ValueError, match="adopt s3:// roots or folders, not both"):
        adopted_cleaned_roots("data:s3://bucket/cleaned")
    assert adopted_cleaned_roots("s3://bucket/a:s3://bucket/b") == [
        ObjectRoot("s3://bucket/a"),
        ObjectRoot("s3://bucket/b"),
    ]


def test_a_tokenizer_trains_on_adopted_objects(s3_bucket, tmp_path, real_raw, monkeypatch, hashed):
    """Training reads the objects (from a temporary folder, removed afterwards); a later
    materialization keeps the tokenizer from the objects' recorded hashes, reading nothing."""
    import os

    from support.dagster_instance import failure_text

    from hrm_assets.common import settings
    from hrm_assets.defs.common.keys import TOKENIZER_KEY
    from hrm_assets.defs.common.resources import DataPaths
    from hrm_assets.defs.tokenizer.assets import tokenizer

    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    write_data_io_layout(tmp_path / "download", real_raw)
    corpus = ObjectStore(ObjectRoot.parse(f"s3://{s3_bucket}/corpus"))
    upload_as_someone_else(tmp_path / "download", corpus)
    users = objects_state(corpus)
    paths = DataPaths(
        data_root=str(tmp_path / "ours"),
        adopted_cleaned=f"s3://{s3_bucket}/corpus/data:s3://{s3_bucket}/corpus/data_clustered",
        prefix_config_path=str(settings.default_prefix_config_path()),
    )
    config = {"ops": {"tokenizer": {"config": {"vocab_size": 512}}}}
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:

        def materialized() -> dict:
            result = dg.materialize(
                [tokenizer],
                instance=instance,
                resources={"data_paths": paths},
                run_config=config,
                raise_on_error=False,
            )
            assert result.success, failure_text(result)
            event = instance.get_latest_materialization_event(TOKENIZER_KEY)
            return {k: v.value for k, v in event.asset_materialization.metadata.items()}

        first = materialized()
        assert first["trained"] is True and first["documents"] == 2 * 43
        assert len(hashed) == 5  # every object once, the one of no known source too
        again = materialized()
        assert again["trained"] is False and again["corpus_changed_since_training"] is False
        assert len(hashed) == 5, "unchanged objects are not read again"
    assert (paths.tokenizer_json).is_file()
    assert os.listdir(tmp_path / "tmp") == [], "the downloaded copies are removed"
    assert objects_state(corpus) == users


def test_s3_roots_adopted_from_the_command_line_then_tokenized(
    s3_bucket, tmp_path, real_raw, small_tokenizer_path
):
    """``python -m hrm_assets.adoption --cleaned s3://...`` with an s3:// tokenized root in
    ``.env``, then ``hrm-materialize-tokenized``, as docs/COMING_FROM_DATA_IO.md says."""
    tokenized_url = f"s3://{s3_bucket}/tokenized"
    adoption = adopt_from_the_command_line(
        tmp_path, s3_bucket, real_raw, small_tokenizer_path, tokenized_url
    )
    corpus, users, run = adoption.corpus, adoption.users, adoption.run
    assert f"s3://{s3_bucket}/corpus/data/mystery_corpus.jsonl" in adoption.adopted.stderr

    done = run("hrm-materialize-tokenized", "flan", "gsm8k_train")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "tokenized/flan: 2 partition(s) done in " in done.stdout
    out = ObjectStore(ObjectRoot.parse(tokenized_url))
    assert sorted(folders_state(out)) == [*FLAN_KEYS, "gsm8k_train.jsonl"]
    assert objects_state(corpus) == users


def test_a_cleaned_asset_run_by_hand_records_the_objects_and_checks_their_rows(
    s3_bucket, tmp_path, real_raw, monkeypatch
):
    """In adoption mode a cleaned asset never cleans: it records the adopted objects and runs
    its rows check over a temporary copy of them, removed afterwards."""
    import tempfile

    from support.dagster_instance import failure_text

    from hrm_assets.cleaning.sources import get_source
    from hrm_assets.common import settings
    from hrm_assets.defs.cleaned.assets import build_cleaned_asset
    from hrm_assets.defs.common.resources import DataPaths

    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    write_data_io_layout(tmp_path / "download", real_raw)
    corpus = ObjectStore(ObjectRoot.parse(f"s3://{s3_bucket}/corpus"))
    upload_as_someone_else(tmp_path / "download", corpus)
    users = objects_state(corpus)
    paths = DataPaths(
        data_root=str(tmp_path / "ours"),
        adopted_cleaned=f"s3://{s3_bucket}/corpus/data",
        tokenized_at=f"s3://{s3_bucket}/tokenized",
        prefix_config_path=str(settings.default_prefix_config_path()),
    )
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [build_cleaned_asset(get_source("gsm8k_train"))],
            instance=instance,
            resources={"data_paths": paths},
            raise_on_error=False,
        )
        assert result.success, failure_text(result)
        (materialization,) = result.asset_materializations_for_node("cleaned__gsm8k_train")
        assert materialization.metadata["adopted"].value is True
        (check,) = result.get_asset_check_evaluations()
        assert check.passed and check.metadata["rows"].value == 20
        assert instance.get_dynamic_partitions(TOKENIZED_PARTITIONS["gsm8k_train"].name) == [
            "gsm8k_train.jsonl"
        ]
    assert list((tmp_path / "tmp").iterdir()) == []
    assert objects_state(corpus) == users


def test_a_missing_bucket_is_one_line_from_the_command(s3_server, tmp_path, monkeypatch):
    import sys

    from support.project_commands import commands_in

    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    (tmp_path / ".env").write_text("HRM_TOKENIZED_ROOT=s3://no-such-bucket-here/tokenized\n")
    run = commands_in(tmp_path)
    done = run(sys.executable, "-m", "hrm_assets.adoption", "--cleaned",
               "s3://no-such-bucket-here/data")  # fmt: skip
    assert done.returncode == 1
    assert "error: s3://no-such-bucket-here: no such bucket" in done.stderr
    assert "Traceback" not in done.stderr
