"""A cleaned corpus in object storage adopted in place (issue 29) and tokenized into a tokenized
root on disk, the common case of a training machine: the Rust core reads each object from the
bucket, the folders on disk hold the bytes tokenizing the same files from a local folder gives,
an object added later is the only one read and tokenized, and the adopted objects are never
written nor copied into the project's cleaned root. Run on the local S3 server, with
declarative automation evaluated as the daemon evaluates it."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import dagster as dg
import pytest
from support.adopted_platform import Platform
from support.cleaned_rows import write_flan_file
from test_adopt_cleaned import FLAN_KEYS, write_data_io_layout
from test_adopt_s3 import (  # noqa: F401
    adopt_from_the_command_line,
    hashed,
    objects_state,
    upload_as_someone_else,
)

from hrm_assets.common.layout import CleanedFile
from hrm_assets.common.storage import ObjectRoot, ObjectStore
from hrm_assets.defs.common.keys import tokenized_key
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.tokenization.chunks import tokenize_files
from hrm_assets.tokenization.outcomes import TokenizeOutcome
from hrm_assets.tokenization.versions import METADATA_FILE

pytestmark = pytest.mark.slow


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file of a tokenized folder by name (its arrays, manifest, marker, sidecars)."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def same_as_from_disk(folder: Path, reference: Path) -> None:
    """``folder`` holds ``reference``'s bytes; ``metadata.json`` alike but for the time it
    records of its source (an object's last-modified, a file's mtime)."""
    import json

    made, expected = folder_files(folder), folder_files(reference)
    assert sorted(made) == sorted(expected)
    for name in expected:
        if name != METADATA_FILE:
            assert made[name] == expected[name], f"{folder.name}/{name}"
    ours, theirs = (json.loads(files[METADATA_FILE]) for files in (made, expected))
    assert {**ours, "source_mtime": 0} == {**theirs, "source_mtime": 0}


def tokenized_from_disk(roots: list[Path], out: Path, tokenizer_json: Path) -> Path:
    """The same cleaned files tokenized from local folders, as ``hrm-tokenize`` does."""
    files = [
        CleanedFile(path=path, root=root)
        for root in roots
        for path in sorted(root.rglob("*"))
        if path.is_file()
    ]
    outcomes = list(tokenize_files(files, out, tokenizer_json))
    assert all(isinstance(outcome, TokenizeOutcome) for outcome in outcomes), outcomes
    return out


def tokenized_checks(instance: dg.DagsterInstance) -> dict[tuple[str, str], bool]:
    """Whether each check of each tokenized partition passed, as last evaluated."""
    found = {}
    evaluated = dg.DagsterEventType.ASSET_CHECK_EVALUATION
    runs = [run.dagster_run.run_id for run in reversed(instance.get_run_records())]
    records = [
        record
        for run_id in runs
        for record in instance.get_records_for_run(run_id, of_type=evaluated).records
    ]
    for record in records:
        evaluation = record.event_log_entry.dagster_event.event_specific_data
        if evaluation.asset_key.path[0] == "tokenized":
            found[(evaluation.partition, evaluation.check_name)] = evaluation.passed
    return found


def data_reads(requests: list[tuple[str, str]], bucket: str) -> set[str]:
    """The objects of the adopted corpus whose data was read (listings excluded)."""
    paths = {urllib.parse.urlsplit(path).path for method, path in requests if method == "GET"}
    prefix = f"/{bucket}/corpus/"
    return {path.removeprefix(prefix) for path in paths if path.startswith(prefix)}


def test_an_s3_corpus_is_tokenized_by_automation_into_a_root_on_disk(
    s3_server,
    s3_bucket,
    tmp_path,
    real_raw,
    small_tokenizer_path,
    monkeypatch,
    hashed,  # noqa: F811
):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    layout = tmp_path / "download"
    write_data_io_layout(layout, real_raw)
    (layout / "data" / "mystery_corpus.jsonl").unlink()  # of no source: never tokenized
    corpus = ObjectStore(ObjectRoot.parse(f"s3://{s3_bucket}/corpus"))
    upload_as_someone_else(layout, corpus)
    users = objects_state(corpus)
    tokenizer_dir = tmp_path / "bpe"
    tokenizer_dir.mkdir()
    (tokenizer_dir / "tokenizer.json").write_bytes(small_tokenizer_path.read_bytes())
    roots = [f"s3://{s3_bucket}/corpus/data", f"s3://{s3_bucket}/corpus/data_clustered"]
    tokenized_root = tmp_path / "tokenized"
    platform = Platform(tmp_path, roots, tokenizer_dir, tokenized_at=str(tokenized_root))
    instance = platform.instance

    platform.sensor_tick()
    assert instance.get_dynamic_partitions(TOKENIZED_PARTITIONS["flan"].name) == FLAN_KEYS
    assert len(hashed) == 4
    requested = platform.automation_tick()
    assert requested == {
        tokenized_key("flan"): FLAN_KEYS,
        tokenized_key("gsm8k_train"): ["gsm8k_train.jsonl"],
        tokenized_key("math_train"): ["math_train.jsonl"],
    }
    names = sorted([*FLAN_KEYS, "gsm8k_train.jsonl", "math_train.jsonl"])
    assert sorted(p.name for p in tokenized_root.iterdir() if p.is_dir()) == names
    reference = tokenized_from_disk(
        [layout / "data", layout / "data_clustered"],
        tmp_path / "from-disk",
        tokenizer_dir / "tokenizer.json",
    )
    for name in names:
        same_as_from_disk(tokenized_root / name, reference / name)
    assert (tokenized_root / "tokenizer_info.json").is_file()
    checks = tokenized_checks(instance)
    assert {partition for partition, _ in checks} == set(names)
    assert all(checks.values()), checks
    first_pass = len(hashed)
    assert first_pass == 4, "the objects were hashed by the sensor, not again to tokenize"

    # Nothing changed: nothing requested, nothing read.
    with s3_server.recording() as requests:
        platform.sensor_tick()
        assert platform.automation_tick() == {}
        assert data_reads(requests(), s3_bucket) == set()
    assert len(hashed) == first_pass

    # An object added later: the only one read (hashed once, then tokenized) and tokenized.
    before = {name: folder_files(tokenized_root / name) for name in names}
    added = "cot_fsopt_data__task7.parquet"
    write_flan_file(
        layout / "data_clustered" / "flan" / added,
        [{"condition": "cot", "instruction": "2 + 2?", "response": "4"}] * 3,
    )
    corpus.fs.pipe_file(
        f"{corpus.root.path}/data_clustered/flan/{added}",
        (layout / "data_clustered" / "flan" / added).read_bytes(),
    )
    users = objects_state(corpus)
    flan_records = dg.AssetRecordsFilter(asset_key=tokenized_key("flan"))
    last_before = instance.fetch_materializations(flan_records, limit=1).records[0].storage_id
    with s3_server.recording() as requests:
        platform.sensor_tick()
        assert platform.automation_tick() == {tokenized_key("flan"): [*FLAN_KEYS, f"flan__{added}"]}
        assert data_reads(requests(), s3_bucket) == {f"data_clustered/flan/{added}"}
    assert hashed[first_pass:] == [f"flan/{added}"]
    records = instance.fetch_materializations(flan_records, limit=100).records
    newer = [r for r in records if r.storage_id > last_before]
    assert [r.partition_key for r in newer] == [f"flan__{added}"]
    assert {name: folder_files(tokenized_root / name) for name in names} == before
    reference = tokenized_from_disk(
        [layout / "data_clustered"], tmp_path / "from-disk-2", tokenizer_dir / "tokenizer.json"
    )
    same_as_from_disk(tokenized_root / f"flan__{added}", reference / f"flan__{added}")
    assert all(tokenized_checks(instance).values())

    # The adopted objects were never written, nor copied into the project's roots.
    assert objects_state(corpus) == users
    assert not (tmp_path / "ours" / "cleaned").exists()
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []


def test_an_s3_corpus_adopted_from_the_command_line_is_tokenized_into_folders_on_disk(
    s3_server, s3_bucket, tmp_path, real_raw, small_tokenizer_path
):
    """The commands docs/COMING_FROM_DATA_IO.md gives, run as a user runs them:
    ``python -m hrm_assets.adoption --cleaned s3://...`` with a tokenized root on disk in
    ``.env``, then ``hrm-materialize-tokenized``; the folders hold what ``hrm-tokenize`` gives
    for the same files from disk, and a second run reads no object."""
    tokenized_root = tmp_path / "tokenized"
    adoption = adopt_from_the_command_line(
        tmp_path, s3_bucket, real_raw, small_tokenizer_path, str(tokenized_root)
    )
    corpus, users, run = adoption.corpus, adoption.users, adoption.run
    # No tokenized root of another tool's to adopt.
    assert f"adopted tokenized root {tokenized_root}" not in adoption.adopted.stdout
    sources = ("flan", "gsm8k_train", "math_train")
    done = run("hrm-materialize-tokenized", *sources)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("tokenized/flan:"))
    assert line.endswith("): 2 tokenized, 0 unchanged"), line

    reference = tmp_path / "from-disk"
    made = run("hrm-tokenize", "download/data", "download/data_clustered", "-o", str(reference),
               "-t", "bpe/tokenizer.json", "--no-progress")  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    names = sorted([*FLAN_KEYS, "gsm8k_train.jsonl", "math_train.jsonl"])
    assert sorted(p.name for p in tokenized_root.iterdir() if p.is_dir()) == names
    for name in names:
        same_as_from_disk(tokenized_root / name, reference / name)
    before = {name: folder_files(tokenized_root / name) for name in names}

    with s3_server.recording() as requests:
        again = run("hrm-materialize-tokenized", *sources)
        assert data_reads(requests(), s3_bucket) == set()
    assert again.returncode == 0, again.stderr[-3000:]
    line = next(ln for ln in again.stdout.splitlines() if ln.startswith("tokenized/flan:"))
    assert line.endswith("): 0 tokenized, 2 unchanged"), line
    assert {name: folder_files(tokenized_root / name) for name in names} == before
    assert objects_state(corpus) == users
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []
