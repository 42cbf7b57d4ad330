"""The published cleaned corpus credited in the data card (issue 29): an adopted Hub snapshot's
dataset id and revision are recorded beside the tokenized folders (never in them) and every
sampled folder made from them credits the corpus besides the original Hub datasets."""

from __future__ import annotations

import json

import pytest
from support.adopted_platform import Platform, tree_state
from test_adopt_cleaned import FLAN_KEYS, HUB_ID, REVISION, as_hub_cache, write_data_io_layout

from hrm_assets.common import settings
from hrm_assets.contracts.cleaned_provenance import PROVENANCE_FILE, credited_corpora
from hrm_assets.sampling.config import SamplingConfig
from hrm_assets.sampling.sampler import sample_tokenized

pytestmark = pytest.mark.slow

TASKS = [*FLAN_KEYS, "gsm8k_train.jsonl", "math_train.jsonl"]


def tokenized_platform(tmp_path, roots, small_tokenizer_path) -> Platform:
    tokenizer_dir = tmp_path / "bpe"
    tokenizer_dir.mkdir()
    (tokenizer_dir / "tokenizer.json").write_bytes(small_tokenizer_path.read_bytes())
    platform = Platform(tmp_path, roots, tokenizer_dir)
    platform.sensor_tick()
    platform.automation_tick()
    return platform


def sampled_card(platform: Platform, output) -> tuple[dict, str]:
    config = SamplingConfig(
        tokenized_path=platform.paths.tokenized_root,
        output_path=output,
        prefix_config_path=settings.default_prefix_config_path(),
        epochs=2,
    )
    sample_tokenized(config)
    return json.loads((output / "datacard.json").read_text()), (output / "DATACARD.md").read_text()


def test_a_hub_corpus_is_credited_in_the_data_card(tmp_path, real_raw, small_tokenizer_path):
    write_data_io_layout(tmp_path / "download", real_raw)
    roots = as_hub_cache(tmp_path / "download", tmp_path / "hub")
    platform = tokenized_platform(tmp_path, roots, small_tokenizer_path)
    tokenized = platform.paths.tokenized_root
    record = json.loads((tokenized / PROVENANCE_FILE).read_text())
    assert sorted(record["files"]) == TASKS
    assert {(e["hub_id"], e["revision"]) for e in record["files"].values()} == {(HUB_ID, REVISION)}
    folders = {key: tree_state(tokenized / key) for key in TASKS}

    card, markdown = sampled_card(platform, tmp_path / "sampled")
    assert card["cleaned_corpora"] == [{"hub_id": HUB_ID, "revision": REVISION, "tasks": 4}]
    # Besides the original datasets, credited per source as before.
    assert "openai/gsm8k" in {source["hub_id"] for source in card["sources"]}
    assert "## Cleaned corpus" in markdown
    assert f"| `{HUB_ID}` | `{REVISION}` | 4 |" in markdown
    # The tokenized folders' own files are not touched by the record.
    assert {key: tree_state(tokenized / key) for key in TASKS} == folders


def test_a_folder_made_from_another_file_is_not_credited(tmp_path, real_raw, small_tokenizer_path):
    write_data_io_layout(tmp_path / "download", real_raw)
    roots = as_hub_cache(tmp_path / "download", tmp_path / "hub")
    platform = tokenized_platform(tmp_path, roots, small_tokenizer_path)
    tokenized = platform.paths.tokenized_root
    record = json.loads((tokenized / PROVENANCE_FILE).read_text())
    record["files"]["gsm8k_train.jsonl"]["sha256"] = "0" * 64
    (tokenized / PROVENANCE_FILE).write_text(json.dumps(record))
    assert credited_corpora(tokenized, TASKS) == [
        {"hub_id": HUB_ID, "revision": REVISION, "tasks": 3}
    ]


def test_a_plain_folder_credits_no_cleaned_corpus(tmp_path, real_raw, small_tokenizer_path):
    roots = write_data_io_layout(tmp_path / "download", real_raw)
    platform = tokenized_platform(tmp_path, roots, small_tokenizer_path)
    assert not (platform.paths.tokenized_root / PROVENANCE_FILE).exists()
    card, markdown = sampled_card(platform, tmp_path / "sampled")
    assert "cleaned_corpora" not in card and "## Cleaned corpus" not in markdown


def test_a_hub_corpus_tokenized_into_a_bucket_is_credited(
    s3_bucket, tmp_path, real_raw, small_tokenizer_path, monkeypatch
):
    """Adopted Hub folders tokenized into a tokenized root in object storage: the record is an
    object beside the folders (one PUT, with its SHA-256), fetched into the working copy the
    sampler reads, and the sampled folder's data card credits the corpus."""
    import hashlib

    from hrm_assets.common.data_root import DataRoot
    from hrm_assets.common.storage import ObjectRoot, ObjectStore
    from hrm_assets.sampling.remote_input import readable_tokenized

    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    write_data_io_layout(tmp_path / "download", real_raw)
    roots = as_hub_cache(tmp_path / "download", tmp_path / "hub")
    users = tree_state(tmp_path / "hub")
    tokenizer_dir = tmp_path / "bpe"
    tokenizer_dir.mkdir()
    (tokenizer_dir / "tokenizer.json").write_bytes(small_tokenizer_path.read_bytes())
    tokenized_url = f"s3://{s3_bucket}/tokenized"
    platform = Platform(tmp_path, roots, tokenizer_dir, tokenized_at=tokenized_url)
    platform.sensor_tick()
    platform.automation_tick()

    store = ObjectStore(ObjectRoot.parse(tokenized_url))
    data = store.get_bytes(PROVENANCE_FILE)
    record = json.loads(data)
    assert sorted(record["files"]) == TASKS
    assert {(e["hub_id"], e["revision"]) for e in record["files"].values()} == {(HUB_ID, REVISION)}
    assert store.head(PROVENANCE_FILE).sha256 == hashlib.sha256(data).hexdigest()
    etag = store.head(PROVENANCE_FILE).etag
    platform.sensor_tick()
    assert store.head(PROVENANCE_FILE).etag == etag, "an unchanged record is not written again"
    assert not (tmp_path / "ours" / "tokenized").exists(), "nothing kept on disk instead"

    tokenized = DataRoot(ObjectRoot.parse(tokenized_url))
    with readable_tokenized(tokenized, None, lambda line: None) as (local, _):
        config = SamplingConfig(
            tokenized_path=local,
            output_path=tmp_path / "sampled",
            prefix_config_path=settings.default_prefix_config_path(),
            epochs=2,
        )
        sample_tokenized(config)
    card = json.loads((tmp_path / "sampled" / "datacard.json").read_text())
    markdown = (tmp_path / "sampled" / "DATACARD.md").read_text()
    assert card["cleaned_corpora"] == [{"hub_id": HUB_ID, "revision": REVISION, "tasks": 4}]
    assert f"| `{HUB_ID}` | `{REVISION}` | 4 |" in markdown
    assert tree_state(tmp_path / "hub") == users
