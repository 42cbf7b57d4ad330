"""A published cleaned corpus adopted without copying (issue 29): data_io's two folders
(``data/*.jsonl``, ``data_clustered/<source>/...parquet``) or a Hugging Face Hub download's
cache (symlinks into ``blobs/``), with data_io's tokenizer. The cleaned assets are recorded
from the files (content versions, provenance), a partition appears per file, declarative
automation tokenizes them, and a file added later tokenizes alone; the user's files are never
written."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import dagster as dg
import pytest
from support.adopted_platform import Platform, tree_state
from support.cleaned_rows import write_flan_file
from support.project_commands import commands_in
from support.tokenizer_reference import gsm8k_rows

from hrm_assets.adoption.cleaned import adopt_cleaned, provenance_of, scan_adopted
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.contracts.cleaned_provenance import PROVENANCE_FILE
from hrm_assets.defs.common.keys import TOKENIZER_KEY, cleaned_key, tokenized_key
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

pytestmark = pytest.mark.slow

HUB_ID = "sapientinc/HRM-Text-data-io-cleaned-20260515"
REVISION = "0123456789abcdef0123456789abcdef01234567"


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def write_data_io_layout(folder: Path, real_raw: Path) -> list[Path]:
    """data_io's cleaned layout: two roots, as its README's download holds them."""
    rows = gsm8k_rows(real_raw, "train", 60)
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "gsm8k_train.jsonl").write_bytes(_jsonl(rows[:20]))
    (folder / "data" / "math_train.jsonl").write_bytes(_jsonl(rows[20:30]))
    (folder / "data" / "mystery_corpus.jsonl").write_bytes(_jsonl(rows[30:33]))
    for index in range(2):
        name = f"cot_fsopt_data__task{index}.parquet"
        write_flan_file(folder / "data_clustered" / "flan" / name, rows[40 + 5 * index :][:5])
    return [folder / "data", folder / "data_clustered"]


def as_hub_cache(layout: Path, cache: Path) -> list[Path]:
    """The same files as huggingface_hub caches a dataset: content-addressed blobs and a
    snapshot of symlinks at a pinned revision."""
    repo = cache / f"datasets--{HUB_ID.replace('/', '--')}"
    snapshot = repo / "snapshots" / REVISION
    (repo / "blobs").mkdir(parents=True)
    for path in sorted(layout.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / path.relative_to(layout)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return [snapshot / "data", snapshot / "data_clustered"]


@pytest.fixture(params=["data_io_folders", "hub_cache", "hub_address"])
def adopted(request, tmp_path, real_raw, small_tokenizer_path, monkeypatch):
    layout = tmp_path / "download"
    roots = write_data_io_layout(layout, real_raw)
    given: list[Path | str] = roots
    if request.param != "data_io_folders":
        roots = given = as_hub_cache(layout, tmp_path / "hf_cache")
    if request.param == "hub_address":
        # hf://datasets/<id>@<revision>/<folder>, resolved in the Hub cache (offline here).
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf_cache"))
        given = [f"hf://datasets/{HUB_ID}@{REVISION}/{root.name}" for root in roots]
    tokenizer_dir = tmp_path / "data_io" / "trained_tokenizers" / "bpe"
    tokenizer_dir.mkdir(parents=True)
    (tokenizer_dir / "tokenizer.json").write_bytes(small_tokenizer_path.read_bytes())
    layout_kind = "hub_cache" if request.param == "hub_address" else request.param
    return layout_kind, roots, tokenizer_dir, Platform(tmp_path, given, tokenizer_dir)


FLAN_KEYS = [f"flan__cot_fsopt_data__task{index}.parquet" for index in range(2)]


def test_an_adopted_corpus_is_recorded_and_tokenized_by_automation(adopted, tmp_path):
    layout, roots, tokenizer_dir, platform = adopted
    users = [tree_state(tmp_path / "download"), tree_state(tokenizer_dir)]
    if layout == "hub_cache":
        users.append(tree_state(tmp_path / "hf_cache"))

    # The corpus is adopted before automation's first evaluation: that evaluation requests it.
    platform.sensor_tick()
    instance = platform.instance
    assert instance.get_dynamic_partitions(TOKENIZED_PARTITIONS["flan"].name) == FLAN_KEYS
    assert instance.get_dynamic_partitions(TOKENIZED_PARTITIONS["gsm8k_train"].name) == [
        "gsm8k_train.jsonl"
    ]
    flan = instance.get_latest_materialization_event(cleaned_key("flan")).asset_materialization
    assert flan.metadata["adopted"].value is True and flan.metadata["file_count"].value == 2
    if layout == "hub_cache":
        assert flan.metadata["hub_id"].value == HUB_ID
        assert flan.metadata["hub_revision"].value == REVISION
    # Every source is recorded (an empty output when the corpus has none of its files), so
    # the tokenizer and the tokenized assets have no missing dependency.
    for name in SOURCES:
        assert instance.get_latest_materialization_event(cleaned_key(name)) is not None

    # data_io's tokenizer is recorded as adopted by the same tick, shown materialized.
    tokenizer = instance.get_latest_materialization_event(TOKENIZER_KEY).asset_materialization
    assert tokenizer.metadata["adopted"].value is True
    assert tokenizer.metadata["vocab_size"].value == 2048
    # Automation then tokenizes every file of a known source.
    requested = platform.automation_tick()
    assert requested == {
        tokenized_key("flan"): FLAN_KEYS,
        tokenized_key("gsm8k_train"): ["gsm8k_train.jsonl"],
        tokenized_key("math_train"): ["math_train.jsonl"],
    }
    for key in [*FLAN_KEYS, "gsm8k_train.jsonl", "math_train.jsonl"]:
        assert (platform.folder(key) / "tokens.npy").is_file()
    assert not platform.folder("mystery_corpus.jsonl").exists()
    platform.sensor_tick()
    assert platform.automation_tick() == {}, "nothing changed: nothing requested"

    # A file added later: only it is tokenized; the others keep their folders and records.
    before = tree_state(platform.paths.tokenized_root)
    added = "cot_fsopt_data__task7.parquet"
    rows = [{"condition": "cot", "instruction": "2 + 2?", "response": "4"}] * 3
    if layout == "hub_cache":
        snapshot_flan = roots[1] / "flan"
        blob = roots[1].parents[2] / "blobs" / "added"
        write_flan_file(blob, rows)
        (snapshot_flan / added).symlink_to(os.path.relpath(blob, snapshot_flan))
    else:
        write_flan_file(roots[1] / "flan" / added, rows)
    users[0] = tree_state(tmp_path / "download")
    if layout == "hub_cache":
        users[2] = tree_state(tmp_path / "hf_cache")
    flan_records = dg.AssetRecordsFilter(asset_key=tokenized_key("flan"))
    last_before = instance.fetch_materializations(flan_records, limit=1).records[0].storage_id
    platform.sensor_tick()
    platform.automation_tick()
    after = tree_state(platform.paths.tokenized_root)
    changed = {
        Path(path).relative_to(platform.paths.tokenized_root).parts[0]
        for path in set(before) | set(after)
        if before.get(path) != after.get(path)
    }
    # Besides the added file's folder, a Hub corpus's provenance record gains that file.
    record = {PROVENANCE_FILE} if layout == "hub_cache" else set()
    assert changed == {f"flan__{added}", *record}
    records = instance.fetch_materializations(flan_records, limit=100).records
    newer = [r for r in records if r.storage_id > last_before]
    assert [r.partition_key for r in newer] == [f"flan__{added}"]
    assert newer[0].asset_materialization.metadata["skipped"].value is False

    # The user's files, links and tokenizer were never written.
    assert tree_state(tmp_path / "download") == users[0]
    assert tree_state(tokenizer_dir) == users[1]
    if layout == "hub_cache":
        assert tree_state(tmp_path / "hf_cache") == users[2]


def test_files_of_no_known_source_are_named_in_a_warning(tmp_path, real_raw):
    roots = write_data_io_layout(tmp_path, real_raw)
    corpus = adopt_cleaned(roots, SOURCES.values())
    assert [item.relative for item in corpus.unknown] == ["mystery_corpus.jsonl"]
    warning = corpus.unknown_warning()
    assert warning.startswith("1 adopted file(s) belong to no known source and are not tokenized")
    assert str(roots[0] / "mystery_corpus.jsonl") in warning and "sources.yaml" in warning
    assert [item.safe_name for item in corpus.sources["flan"].files] == FLAN_KEYS


def test_provenance_of_a_hub_snapshot_and_of_a_folder(tmp_path):
    snapshot = tmp_path / f"datasets--{HUB_ID.replace('/', '--')}" / "snapshots" / REVISION
    found = provenance_of(snapshot / "data")
    assert (found.hub_id, found.revision) == (HUB_ID, REVISION)
    assert provenance_of(tmp_path / "data").hub_id is None


def test_two_roots_with_one_tokenized_name_are_refused(tmp_path):
    for root in ("a", "b"):
        (tmp_path / root).mkdir()
        (tmp_path / root / "gsm8k_train.jsonl").write_text("")
    with pytest.raises(ValueError, match="both map to the tokenized folder 'gsm8k_train.jsonl'"):
        scan_adopted([tmp_path / "a", tmp_path / "b"])


def test_one_adoption_pass_from_the_command_line_then_tokenize_everything(
    tmp_path, real_raw, small_tokenizer_path
):
    """Without the daemon: ``python -m hrm_assets.adoption`` records what the sensor records,
    and ``hrm-materialize-tokenized`` tokenizes the registered files."""
    import sys

    roots = write_data_io_layout(tmp_path / "download", real_raw)
    tokenizer_dir = tmp_path / "bpe"
    tokenizer_dir.mkdir()
    (tokenizer_dir / "tokenizer.json").write_bytes(small_tokenizer_path.read_bytes())
    run = commands_in(tmp_path)
    given = os.pathsep.join(str(root.relative_to(tmp_path)) for root in roots)
    users = tree_state(tmp_path / "download")

    adopted = run(
        sys.executable, "-m", "hrm_assets.adoption", "--cleaned", given, "--tokenizer", "bpe"
    )
    assert adopted.returncode == 0, adopted.stderr[-3000:]
    # Kept in ./.env, where the later commands (and dagster dev) read them.
    absolute = os.pathsep.join(str(root) for root in roots)
    assert (tmp_path / ".env").read_text().splitlines() == [
        f"HRM_ADOPT_CLEANED=${{HRM_ADOPT_CLEANED:-{absolute}}}",
        f"HRM_TOKENIZER_ROOT=${{HRM_TOKENIZER_ROOT:-{tokenizer_dir}}}",
    ]
    assert "5 adopted cleaned file(s)" not in adopted.stdout  # the mystery file is not a source's
    assert "4 adopted cleaned file(s); flan: +2 -0; gsm8k_train: +1 -0" in adopted.stdout
    assert "recorded cleaned/" in adopted.stdout and "tokenizer" in adopted.stdout
    assert "mystery_corpus.jsonl" in adopted.stderr
    again = run(sys.executable, "-m", "hrm_assets.adoption")
    assert "no partition change; nothing new to record" in again.stdout

    done = run("hrm-materialize-tokenized", "flan", "gsm8k_train")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "tokenized/flan: 2 partition(s) done in " in done.stdout
    assert done.stdout.splitlines()[0].endswith("): 2 tokenized, 0 unchanged")
    tokenized = tmp_path / "ours" / "tokenized"
    assert sorted(p.name for p in tokenized.iterdir() if p.is_dir()) == [
        *FLAN_KEYS,
        "gsm8k_train.jsonl",
    ]
    assert tree_state(tmp_path / "download") == users

    (tmp_path / ".env").unlink()
    refused = run(sys.executable, "-m", "hrm_assets.adoption")
    assert refused.returncode == 2 and "HRM_ADOPT_CLEANED is not set" in refused.stderr
