"""The contamination report over roots in object storage, on the local S3 server: tokenized
folders in a bucket carry their sidecars (published with them, a rewrite without sidecars
deleting the old ones), the report reads them from the bucket without reading any cleaned
object and equals the report of the same files on disk; a root without sidecars is scanned by
downloading its objects; adopted ``s3://`` roots tokenized into folders on disk are reported
from those folders' sidecars; a bucket partition re-materialized unchanged records the
contamination its first write recorded, from its sidecars alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest
from support.cleaned_rows import write_flan_file
from support.object_storage import SIDECAR_FILES, upload_tree

from contamination.test_sidecar import saved_eval_sets
from hrm_assets.adoption.objects import AdoptedObjects
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.storage import ObjectRoot, ObjectStore
from hrm_assets.contamination.scan import Report
from hrm_assets.contamination.sidecar import OBSERVE_ENV
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.eval.assets import contamination, report_path
from hrm_assets.defs.tokenized.assets import build_tokenized_asset
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.tokenization.objects_to_disk import tokenize_objects
from hrm_assets.tokenization.outcomes import TokenizeFailure
from hrm_assets.tokenization.remote import RemoteCleaned, RemoteTokenized, tokenize_remote
from hrm_assets.tokenization.tokenizer_setup import TokenizerSetup


def row(instruction: str, response: str) -> dict:
    return {"condition": "direct", "instruction": instruction, "response": response}


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def cleaned(tmp_path, eval_sets, real_raw) -> Path:
    """Cleaned files of three sources with GSM8K and MATH test items planted and a row
    repeated within and across sources."""
    gsm8k, math, *_ = eval_sets
    lines = (real_raw / "gsm8k" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    train = [json.loads(line) for line in lines[:60]]
    rows = [row(r["question"], r["answer"]) for r in train]
    rows[5] = row(gsm8k.texts["question"][3], "18")
    rows[20] = row("Solve it: " + math.texts["problem"][40].upper(), "7")
    rows.append(rows[0])
    root = tmp_path / "cleaned"
    write_jsonl(root / "gsm8k_train.jsonl", rows)
    write_jsonl(root / "math_train.jsonl", [rows[1], row("What is 2 + 2?", "4")])
    flan = [row(gsm8k.texts["question"][9], "3"), row("Name a colour.", "Blue")]
    write_flan_file(root / "flan" / "cot_fsopt_data__task0.parquet", flan)
    return root


def report_of(paths: DataPaths) -> dict:
    result = dg.materialize([contamination], resources={"data_paths": paths})
    assert result.success
    report = Report.read(report_path(paths)).to_dict()
    for result in report["files"]:
        result["name"] = result["name"].rsplit("/", 1)[-1]
    return report


def paths_under(tmp_path: Path, **roots: str) -> DataPaths:
    """The platform's paths for a test: its data root and rules under ``tmp_path``, and
    ``roots`` (cleaned_at, tokenized_at, adopted_cleaned, tokenizer_at) as given."""
    return DataPaths(
        data_root=str(tmp_path / "data"),
        prefix_config_path=str(tmp_path / "prefix_config.yaml"),
        **roots,
    )


def cleaned_gets(requests: list[tuple[str, str]], bucket: str, prefix: str) -> list[str]:
    return [path for method, path in requests if method == "GET" and f"/{bucket}/{prefix}/" in path]


def test_bucket_folders_carry_their_sidecars_and_the_report_reads_them(
    tmp_path, monkeypatch, s3_server, s3_bucket, cleaned, eval_sets, small_tokenizer_path
):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data"
    monkeypatch.setenv("HRM_DATA_ROOT", str(data))
    saved_eval_sets(data, eval_sets)
    on_disk = paths_under(tmp_path, cleaned_at=str(cleaned), tokenized_at=str(tmp_path / "none"))
    expected = report_of(on_disk)
    assert expected["sources"]["gsm8k_train"]["rows_hit"] == 2
    assert expected["sources"]["flan"]["rows_hit"] == 1
    assert expected["duplicates"]["pairs"] == [
        {"first": "gsm8k_train", "later": "gsm8k_train", "rows": 1},
        {"first": "gsm8k_train", "later": "math_train", "rows": 1},
    ]

    base = ObjectRoot.parse(f"s3://{s3_bucket}/data")
    upload_tree(cleaned, ObjectStore(base.join("cleaned")))
    setup = TokenizerSetup.load(small_tokenizer_path)
    remote = RemoteCleaned.scan(base.join("cleaned"))
    for name, observe in (("tokenized", "1"), ("plain", "0")):
        monkeypatch.setenv(OBSERVE_ENV, observe)
        out = RemoteTokenized(base.join(name))
        results = list(tokenize_remote(remote.files(), remote, out, setup))
        assert not [r for r in results if isinstance(r, TokenizeFailure)], results
    monkeypatch.delenv(OBSERVE_ENV)
    folders = RemoteTokenized(base.join("tokenized")).folders()
    assert all(set(SIDECAR_FILES) <= set(files) for files in folders.values())
    assert not any(
        set(SIDECAR_FILES) & set(files)
        for files in RemoteTokenized(base.join("plain")).folders().values()
    )

    in_bucket = paths_under(
        tmp_path, cleaned_at=str(base.join("cleaned")), tokenized_at=str(base.join("tokenized"))
    )
    with s3_server.recording() as requests:
        assert report_of(in_bucket) == expected
        assert cleaned_gets(requests(), s3_bucket, "data/cleaned") == []
    with s3_server.recording() as requests:
        assert report_of(in_bucket) == expected
        # The two roots listed, nothing read: the sidecars are the working copy's already.
        gets = [path for method, path in requests() if method == "GET"]
        assert len(gets) == 2 and all("list-type=2" in path for path in gets), gets

    without = paths_under(
        tmp_path, cleaned_at=str(base.join("cleaned")), tokenized_at=str(base.join("plain"))
    )
    with s3_server.recording() as requests:
        assert report_of(without) == expected
        read = cleaned_gets(requests(), s3_bucket, "data/cleaned")
    assert {path.rsplit("/", 1)[-1] for path in read} == {
        "gsm8k_train.jsonl",
        "math_train.jsonl",
        "cot_fsopt_data__task0.parquet",
    }

    # A folder rewritten without sidecars loses those of its previous write.
    out = RemoteTokenized(base.join("tokenized"))
    out.store.delete(["gsm8k_train.jsonl/manifest.json"])
    monkeypatch.setenv(OBSERVE_ENV, "0")
    rewritten = list(tokenize_remote(remote.files(), remote, out, setup))
    assert [r.safe_name for r in rewritten if not r.skipped] == ["gsm8k_train.jsonl"]
    assert not set(SIDECAR_FILES) & set(out.folders()["gsm8k_train.jsonl"])
    monkeypatch.delenv(OBSERVE_ENV)
    assert report_of(in_bucket) == expected


def test_adopted_objects_tokenized_on_disk_are_reported_from_their_sidecars(
    tmp_path, monkeypatch, s3_server, s3_bucket, cleaned, eval_sets, small_tokenizer_path
):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data"
    monkeypatch.setenv("HRM_DATA_ROOT", str(data))
    saved_eval_sets(data, eval_sets)
    reference = tmp_path / "reference"
    shutil.copytree(cleaned, reference)
    expected = report_of(paths_under(tmp_path, cleaned_at=str(reference)))
    corpus = ObjectRoot.parse(f"s3://{s3_bucket}/corpus")
    upload_tree(cleaned, ObjectStore(corpus))
    objects = AdoptedObjects([corpus])
    setup = TokenizerSetup.load(small_tokenizer_path)
    tokenized = data / "tokenized"
    results = list(
        tokenize_objects(objects.files(), objects, tokenized, setup, objects.storage_options())
    )
    assert not [r for r in results if isinstance(r, TokenizeFailure)], results
    adopted = paths_under(tmp_path, adopted_cleaned=str(corpus))
    with s3_server.recording() as requests:
        assert report_of(adopted) == expected
        assert cleaned_gets(requests(), s3_bucket, "corpus") == []


def test_a_reused_bucket_partition_records_the_contamination_of_its_sidecars(
    tmp_path, monkeypatch, s3_server, s3_bucket, cleaned, eval_sets, small_tokenizer_path
):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data"
    monkeypatch.setenv("HRM_DATA_ROOT", str(data))
    saved_eval_sets(data, eval_sets)
    tokenizer = tmp_path / "tokenizer"
    tokenizer.mkdir()
    shutil.copy(small_tokenizer_path, tokenizer / "tokenizer.json")
    base = ObjectRoot.parse(f"s3://{s3_bucket}/data")
    upload_tree(cleaned, ObjectStore(base.join("cleaned")))
    paths = paths_under(
        tmp_path,
        cleaned_at=str(base.join("cleaned")),
        tokenizer_at=str(tokenizer),
        tokenized_at=str(base.join("tokenized")),
    )
    spec = SOURCES["gsm8k_train"]
    partition = "gsm8k_train.jsonl"

    def contamination_recorded(instance) -> dict:
        result = dg.materialize(
            [build_tokenized_asset(spec)],
            partition_key=partition,
            instance=instance,
            resources={"data_paths": paths},
        )
        assert result.success
        (record,) = result.asset_materializations_for_node(f"tokenized_{spec.name}")
        assert record.partition == partition
        return {
            name: value
            for name, value in record.metadata.items()
            if name.startswith("contamination/") or name in ("skipped", "path")
        }

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(TOKENIZED_PARTITIONS[spec.name].name, [partition])
        written = contamination_recorded(instance)
        assert written.pop("skipped").value is False
        assert written["contamination/rows_hit"].value == 2
        # Another machine's working copy: the reused folder's sidecars are not there yet.
        monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "other_cache"))
        with s3_server.recording() as requests:
            reused = contamination_recorded(instance)
            gets = [path for method, path in requests() if method == "GET"]
    assert reused.pop("skipped").value is True
    # Both records name the folder where it is published, in the bucket.
    assert written["path"].value == reused["path"].value == str(base.join("tokenized", partition))
    assert reused == written
    read = [path.rsplit("/", 1)[-1] for path in gets if "list-type=2" not in path]
    assert not [path for path in gets if "/data/cleaned/" in path and "list-type=2" not in path]
    assert not [name for name in read if name.endswith(".npy")]
    assert set(SIDECAR_FILES) <= set(read)
