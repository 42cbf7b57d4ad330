"""``hf://datasets/<org>/<name>@<revision>[/<folder>]`` addresses of adopted cleaned roots,
resolved in a local Hub cache laid out as huggingface_hub keeps one (the Hub is offline here:
tests/conftest.py sets HF_HUB_OFFLINE)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hrm_assets.common.hub_cache import HubAddressError, hub_snapshot_folder, parse_hub_address
from hrm_assets.common.settings import adopted_cleaned_roots, adopted_root_entries

REVISION = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture()
def hub_cache(tmp_path, monkeypatch) -> Path:
    """One dataset, ``sapientinc/cleaned``, at REVISION, which ``main`` points to."""
    repo = tmp_path / "hub" / "datasets--sapientinc--cleaned"
    snapshot = repo / "snapshots" / REVISION
    (snapshot / "data").mkdir(parents=True)
    (repo / "blobs").mkdir()
    blob = repo / "blobs" / ("0" * 64)
    blob.write_text('{"condition":"cot","instruction":"q","response":"a"}\n', encoding="utf-8")
    (snapshot / "data" / "gsm8k_train.jsonl").symlink_to(blob)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION, encoding="utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return snapshot


def test_addresses_name_a_dataset_a_revision_and_a_folder():
    assert parse_hub_address("hf://datasets/org/name@abc/data") == ("org/name", "abc", "data")
    assert parse_hub_address("hf://datasets/org/name") == ("org/name", "main", "")
    for bad in ("hf://models/org/name", "hf://datasets/name", "hf://datasets/o/n@r/../x"):
        with pytest.raises(HubAddressError, match="hf://"):
            parse_hub_address(bad)


def test_a_pinned_address_is_its_snapshot_folder_in_the_cache(hub_cache):
    address = f"hf://datasets/sapientinc/cleaned@{REVISION}/data"
    assert hub_snapshot_folder(address) == hub_cache / "data"
    # A branch resolves through refs/, as huggingface_hub does offline.
    assert hub_snapshot_folder("hf://datasets/sapientinc/cleaned") == hub_cache


def test_a_dataset_neither_cached_nor_reachable_is_one_line(hub_cache):
    with pytest.raises(HubAddressError) as error:
        hub_snapshot_folder("hf://datasets/sapientinc/elsewhere@main")
    message = str(error.value)
    assert message.startswith("hf://datasets/sapientinc/elsewhere@main: not in the Hub cache")
    assert "\n" not in message


def test_a_folder_missing_from_the_snapshot_is_named(hub_cache):
    with pytest.raises(HubAddressError, match="no folder 'data_clustered'"):
        hub_snapshot_folder(f"hf://datasets/sapientinc/cleaned@{REVISION}/data_clustered")


def test_adopted_roots_mix_folders_and_addresses(hub_cache, tmp_path):
    value = os.pathsep.join(
        [str(tmp_path / "data"), f"hf://datasets/sapientinc/cleaned@{REVISION}"]
    )
    assert adopted_root_entries(value) == [
        str(tmp_path / "data"),
        f"hf://datasets/sapientinc/cleaned@{REVISION}",
    ]
    assert adopted_cleaned_roots(value) == [tmp_path / "data", hub_cache]


def test_an_unadoptable_url_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="HRM_ADOPT_CLEANED: gs://bucket/cleaned: only folders"):
        adopted_cleaned_roots("gs://bucket/cleaned")
