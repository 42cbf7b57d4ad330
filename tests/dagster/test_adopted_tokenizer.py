"""A tokenizer.json hrm-data did not train (data_io's shipped one, in HRM_TOKENIZER_ROOT) is
adopted through Dagster: shown materialized with its hash and vocabulary, and no
materialization (default, retrain, another file, a tokenized run) modifies it (issue 29)."""

from __future__ import annotations

import json

import dagster as dg
import pytest
from support.dagster_instance import failure_text

from hrm_assets.common import settings
from hrm_assets.common.hashing import file_sha256
from hrm_assets.defs.common.keys import TOKENIZER_KEY, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.assets import TOKENIZED_ASSETS
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.defs.tokenizer.assets import tokenizer
from hrm_assets.tokenizer.train import train_tokenizer

pytestmark = pytest.mark.slow


def _folder_state(folder):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


@pytest.fixture
def setup(tmp_path, small_tokenizer_path):
    """data_io's layout: its shipped tokenizer in its own folder, a cleaned file, our data root
    elsewhere; HRM_TOKENIZER_ROOT names the shipped tokenizer's folder."""
    shipped = tmp_path / "data_io" / "trained_tokenizers" / "bpe"
    shipped.mkdir(parents=True)
    (shipped / "tokenizer.json").write_bytes(small_tokenizer_path.read_bytes())
    data = tmp_path / "data"
    (data / "cleaned").mkdir(parents=True)
    rows = [
        {"condition": "cot", "instruction": f"What is {i} + {i}?", "response": f"{2 * i}"}
        for i in range(30)
    ]
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (data / "cleaned" / "gsm8k_train.jsonl").write_text(text)
    paths = DataPaths(
        data_root=str(data),
        tokenizer_at=str(shipped),
        prefix_config_path=str(settings.default_prefix_config_path()),
    )
    home = tmp_path / "home"
    home.mkdir()
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        yield instance, paths, shipped


def _materialize(instance, paths, assets, **kwargs) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        assets, instance=instance, resources={"data_paths": paths}, raise_on_error=False, **kwargs
    )


def test_no_materialization_modifies_an_adopted_tokenizer(setup, tmp_path):
    instance, paths, shipped = setup
    before = _folder_state(shipped)
    digest = file_sha256(shipped / "tokenizer.json")

    # The default materialization (what automation's on-missing request runs) adopts it.
    result = _materialize(instance, paths, [tokenizer])
    assert result.success, failure_text(result)
    event = instance.get_latest_materialization_event(TOKENIZER_KEY)
    metadata = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    assert metadata["adopted"] is True and metadata["trained"] is False
    assert metadata["sha256"] == digest and metadata["vocab_size"] == 2048
    assert event.asset_materialization.tags["dagster/data_version"] == digest
    assert _folder_state(shipped) == before

    # New settings: still adopted, never retrained over it.
    config = {"ops": {"tokenizer": {"config": {"vocab_size": 600}}}}
    assert _materialize(instance, paths, [tokenizer], run_config=config).success
    assert _folder_state(shipped) == before

    # An explicit retrain is refused, and says where to train instead.
    config = {"ops": {"tokenizer": {"config": {"retrain": True}}}}
    result = _materialize(instance, paths, [tokenizer], run_config=config)
    assert not result.success
    assert "never replaced in place" in failure_text(result)
    assert _folder_state(shipped) == before

    # Copying another tokenizer over it is refused too.
    other = tmp_path / "other.json"
    train_tokenizer(["one two three four"] * 30, vocab_size=300).save(str(other))
    config = {"ops": {"tokenizer": {"config": {"tokenizer_path": str(other)}}}}
    result = _materialize(instance, paths, [tokenizer], run_config=config)
    assert not result.success and "differs from" in failure_text(result)
    assert _folder_state(shipped) == before

    # Tokenizing with it reads it and writes only under the tokenized root.
    instance.add_dynamic_partitions(TOKENIZED_PARTITIONS["gsm8k_train"].name, ["gsm8k_train.jsonl"])
    (gsm8k,) = [a for a in TOKENIZED_ASSETS if tokenized_key("gsm8k_train") in a.keys]
    result = _materialize(instance, paths, [gsm8k], partition_key="gsm8k_train.jsonl")
    assert result.success, failure_text(result)
    info = json.loads((paths.tokenized_root / "tokenizer_info.json").read_text())
    assert info["tokenizer_path"] == str(shipped / "tokenizer.json")
    assert _folder_state(shipped) == before


def _tokenizer_metadata(instance) -> dict:
    event = instance.get_latest_materialization_event(TOKENIZER_KEY)
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def test_retraining_on_an_adopted_hub_corpus_writes_a_tokenizer_of_its_own(
    tmp_path, real_raw, small_tokenizer_path
):
    """The explicit choice to train: the tokenizer reads the adopted files (through the Hub
    cache's links) and is written into a folder of its own; the adopted tokenizer and files
    stay as they are."""
    from support.adopted_platform import tree_state
    from test_adopt_cleaned import as_hub_cache, write_data_io_layout

    write_data_io_layout(tmp_path / "download", real_raw)
    roots = as_hub_cache(tmp_path / "download", tmp_path / "hub")
    shipped = tmp_path / "data_io" / "bpe"
    shipped.mkdir(parents=True)
    (shipped / "tokenizer.json").write_bytes(small_tokenizer_path.read_bytes())
    users = {folder: tree_state(folder) for folder in (tmp_path / "hub", shipped)}

    def paths_with(tokenizer_dir) -> DataPaths:
        return DataPaths(
            data_root=str(tmp_path / "ours"),
            tokenizer_at=str(tokenizer_dir),
            adopted_cleaned=":".join(str(root) for root in roots),
            prefix_config_path=str(settings.default_prefix_config_path()),
        )

    retrain = {"ops": {"tokenizer": {"config": {"retrain": True, "vocab_size": 512}}}}
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        refused = _materialize(instance, paths_with(shipped), [tokenizer], run_config=retrain)
        assert not refused.success and "never replaced in place" in failure_text(refused)

        own = tmp_path / "ours" / "bpe"
        trained = _materialize(instance, paths_with(own), [tokenizer], run_config=retrain)
        assert trained.success, failure_text(trained)
        metadata = _tokenizer_metadata(instance)
        assert metadata["trained"] is True and metadata["adopted"] is False
        # Every row of every adopted file (43 rows, through links): instruction and response.
        assert metadata["documents"] == 2 * 43
        assert file_sha256(own / "tokenizer.json") != file_sha256(shipped / "tokenizer.json")

        # Without the choice to retrain, the tokenizer trained on the same files is kept.
        kept = _materialize(
            instance,
            paths_with(own),
            [tokenizer],
            run_config={"ops": {"tokenizer": {"config": {"vocab_size": 512}}}},
        )
        assert kept.success, failure_text(kept)
        metadata = _tokenizer_metadata(instance)
        assert metadata["trained"] is False and metadata["corpus_changed_since_training"] is False
    assert {folder: tree_state(folder) for folder in users} == users
