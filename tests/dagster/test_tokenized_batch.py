"""Issue 14: many tokenized partitions in one run, each recorded truthfully.

A run over a partition range hands every file to the Rust core at once; each partition still
gets its own data version, rows, tokens, ``skipped`` and check results; an unchanged partition
keeps its record; a failing file fails its own partition (named), the others are recorded."""

# ruff: noqa: F401, F811  (the shared fixtures are imported by name)
from __future__ import annotations

import subprocess
import sys

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.partition_status_cache import get_and_update_asset_status_cache_value
from support.cleaned_rows import write_flan_file
from support.dagster_instance import data_paths, failure_text, instance
from support.instance_config import write_config
from support.tokenized_trees import tree_bytes
from support.tokenizer_reference import gsm8k_rows

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.manifest import verify_folder
from hrm_assets.defs.tokenized.assets import (
    FILES_PER_RUN_ENV,
    build_tokenized_asset,
    tokenize_backfill_policy,
)
from hrm_assets.defs.tokenized.partition_range import all_partitions_tags, main, source_of
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

FLAN = SOURCES["flan"]
KEY = dg.AssetKey(["tokenized", "flan"])
FILES = 12


def register_flan(instance, data_paths, real_raw) -> list[str]:
    """Twelve cleaned FLAN task files (1 to 23 rows) registered as partitions."""
    rows = gsm8k_rows(real_raw, "train", 200)
    keys = []
    for index in range(FILES):
        name = f"cot_fsopt_data__task{index:02d}.parquet"
        write_flan_file(data_paths.cleaned_root / "flan" / name, rows[index * 13 : index * 15 + 1])
        keys.append(f"flan__{name}")
    instance.add_dynamic_partitions(TOKENIZED_PARTITIONS[FLAN.name].name, keys)
    return keys


@pytest.fixture
def flan(instance, data_paths, real_raw):
    return register_flan(instance, data_paths, real_raw)


@pytest.fixture(params=["dagster_sqlite", "pooled_sqlite"])
def any_instance(request, tmp_path):
    """Dagster's own SQLite instance (a planned event per partition) and the project's (one
    planned event per run), which mark failed partitions differently."""
    if request.param == "dagster_sqlite":
        yield request.getfixturevalue("instance")
        return
    home = tmp_path / "pooled_home"
    home.mkdir()
    write_config(home, home)
    pooled = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    yield pooled
    pooled.dispose()


def run_all(instance, data_paths) -> dg.ExecuteInProcessResult:
    job = dg.Definitions(
        assets=[build_tokenized_asset(FLAN)], resources={"data_paths": data_paths}
    ).resolve_implicit_global_asset_job_def()
    return job.execute_in_process(
        instance=instance, tags=all_partitions_tags(instance, FLAN.name), raise_on_error=False
    )


def latest_records(instance) -> dict[str, dg.EventLogRecord]:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=KEY), limit=10_000
    ).records
    latest = {}
    for record in records:  # newest first
        latest.setdefault(record.partition_key, record)
    return latest


def versions(instance) -> dict[str, str]:
    return {
        key: record.asset_materialization.tags[DATA_VERSION_TAG]
        for key, record in latest_records(instance).items()
    }


def test_one_run_records_every_partition_with_its_own_version(any_instance, data_paths, real_raw):
    instance = any_instance
    flan = register_flan(instance, data_paths, real_raw)
    result = run_all(instance, data_paths)
    assert result.success
    assert len(instance.get_runs()) == 1
    records = latest_records(instance)
    assert sorted(records) == flan
    assert len(set(versions(instance).values())) == FILES  # one version per file, not per run
    for key, record in records.items():
        metadata = {
            name: value.value for name, value in record.asset_materialization.metadata.items()
        }
        folder = data_paths.tokenized_root / key
        assert metadata["path"] == str(folder)
        assert metadata["skipped"] is False
        assert (
            metadata["dagster/row_count"] > 0 and metadata["tokens"] > metadata["dagster/row_count"]
        )
        assert verify_folder(folder).ok
    evaluations = result.get_asset_check_evaluations()
    assert {(e.partition, e.check_name) for e in evaluations} == {
        (key, name) for key in flan for name in ("arrays_consistent", "manifest_valid")
    }
    assert all(e.passed and e.target_materialization_data is not None for e in evaluations)
    # As stored (what the UI reads): each partition's checks passed, on its latest record.
    checks = [dg.AssetCheckKey(KEY, name) for name in ("arrays_consistent", "manifest_valid")]
    infos = instance.event_log_storage.get_asset_check_partition_info(checks)
    assert sorted((info.partition_key, info.check_key.name) for info in infos) == sorted(
        (key, check.name) for key in flan for check in checks
    )
    for info in infos:
        assert info.latest_execution_status.value == "SUCCEEDED" and info.is_current
        assert info.latest_materialization_storage_id == records[info.partition_key].storage_id


def test_a_changed_file_changes_only_its_partitions_version(any_instance, data_paths, real_raw):
    instance = any_instance
    flan = register_flan(instance, data_paths, real_raw)
    assert run_all(instance, data_paths).success
    before = versions(instance)
    count = len(instance.fetch_materializations(KEY, limit=10_000).records)

    unchanged = run_all(instance, data_paths)
    assert unchanged.success
    assert versions(instance) == before
    # Unchanged partitions keep their records: a no-op rebuild writes one, for freshness (the
    # first file, re-verified, with the same version).
    assert len(instance.fetch_materializations(KEY, limit=10_000).records) == count + 1
    heartbeat = latest_records(instance)[flan[0]].asset_materialization
    assert heartbeat.metadata["skipped"].value is True
    assert unchanged.get_asset_check_evaluations() == []

    changed = flan[5]
    write_flan_file(
        data_paths.cleaned_root / "flan" / changed.removeprefix("flan__"),
        gsm8k_rows(real_raw, "test", 4),
    )
    assert run_all(instance, data_paths).success
    after = versions(instance)
    assert {key for key in flan if after[key] != before[key]} == {changed}
    assert len(instance.fetch_materializations(KEY, limit=10_000).records) == count + 2


def test_a_failing_file_fails_its_partition_by_name_and_the_others_are_recorded(
    any_instance, data_paths, real_raw
):
    instance = any_instance
    flan = register_flan(instance, data_paths, real_raw)
    broken = flan[3]
    rows = gsm8k_rows(real_raw, "train", 5)
    rows[2]["condition"] = "sarcastic"
    path = data_paths.cleaned_root / "flan" / broken.removeprefix("flan__")
    write_flan_file(path, rows)

    result = run_all(instance, data_paths)
    assert not result.success
    text = failure_text(result)
    assert f"1 of {FILES} file(s) of flan failed" in text
    assert f"{broken}: {path}: row 3, field 'condition': unknown tag" in text
    assert sorted(latest_records(instance)) == sorted(set(flan) - {broken})
    assert not (data_paths.tokenized_root / broken).exists()
    status = get_and_update_asset_status_cache_value(instance, KEY, TOKENIZED_PARTITIONS[FLAN.name])
    partitions = TOKENIZED_PARTITIONS[FLAN.name]
    failed = set(status.deserialize_failed_partition_subsets(partitions).get_partition_keys())
    assert failed == {broken}

    # After a good run the same file is fine and the others keep their records.
    before = versions(instance)
    write_flan_file(path, gsm8k_rows(real_raw, "train", 5))
    assert run_all(instance, data_paths).success
    after = versions(instance)
    assert set(after) == set(flan)
    assert {key: after[key] for key in before} == before


def test_files_written_by_the_cli_are_recorded_as_skipped(
    instance,
    data_paths,
    flan,
    small_tokenizer_path,
):
    subprocess.run(
        [sys.executable, "-m", "hrm_assets.tokenization", str(data_paths.cleaned_root), "-o",
         str(data_paths.tokenized_root), "-t", str(small_tokenizer_path), "--no-progress"],
        check=True, capture_output=True,
    )  # fmt: skip
    folders = sorted(data_paths.tokenized_root.glob("flan__*"))
    before = [tree_bytes(folder) for folder in folders]
    assert run_all(instance, data_paths).success
    assert [tree_bytes(folder) for folder in folders] == before
    records = latest_records(instance)
    assert sorted(records) == flan
    assert all(r.asset_materialization.metadata["skipped"].value for r in records.values())


def test_partition_range_command_names_first_and_last(instance, flan, capsys, monkeypatch):
    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(lambda: instance))
    assert main(["tokenized/flan"]) == 0
    assert capsys.readouterr().out.strip() == f"{flan[0]}...{flan[-1]}"
    assert main(["tokenized/gsm8k_train"]) == 1
    assert "has no partitions yet" in capsys.readouterr().err
    assert source_of("flan") == "flan"
    with pytest.raises(ValueError, match="not a tokenized asset"):
        source_of("tokenized/nope")


def test_files_per_run_spreads_a_backfill(monkeypatch):
    monkeypatch.delenv(FILES_PER_RUN_ENV, raising=False)
    assert tokenize_backfill_policy() == dg.BackfillPolicy.single_run()
    monkeypatch.setenv(FILES_PER_RUN_ENV, "200")
    assert tokenize_backfill_policy() == dg.BackfillPolicy.multi_run(max_partitions_per_run=200)
    monkeypatch.setenv(FILES_PER_RUN_ENV, "lots")
    with pytest.raises(ValueError, match="expected a positive number of files"):
        tokenize_backfill_policy()


def test_nested_roots_fail_the_step_before_anything_is_written(instance, data_paths, flan):
    # The tokenized root lies inside the cleaned root (through a link): the step must refuse
    # before writing tokenizer_info.json or any folder among the cleaned files.
    inside = data_paths.cleaned_root / "flan" / "tokenized_here"
    inside.mkdir()
    data_paths.tokenized_root.parent.mkdir(parents=True, exist_ok=True)
    data_paths.tokenized_root.symlink_to(inside, target_is_directory=True)

    result = run_all(instance, data_paths)

    assert not result.success
    assert "inside" in str(result.get_step_failure_events()[0].step_failure_data.error)
    assert list(inside.iterdir()) == []


def test_materialize_sources_runs_each_source_and_names_the_failing_ones(
    instance, data_paths, flan, real_raw, capsys
):
    from hrm_assets.defs.tokenized.materialize_all import main as materialize_main
    from hrm_assets.defs.tokenized.materialize_all import materialize_sources

    defs = dg.Definitions(
        assets=[build_tokenized_asset(FLAN)],
        jobs=[dg.define_asset_job("tokenize_flan", selection=[KEY])],
        resources={"data_paths": data_paths},
    )
    lines: list[str] = []
    assert materialize_sources(defs, instance, ["gsm8k_train", "flan"], log=lines.append) == []
    assert lines[0] == "tokenized/gsm8k_train: no registered files, nothing to do"
    assert lines[1].startswith(f"tokenized/flan: {FILES} partition(s) done in ")
    assert sorted(latest_records(instance)) == sorted(flan)

    rows = gsm8k_rows(real_raw, "train", 3)
    rows[1]["condition"] = "sarcastic"
    write_flan_file(data_paths.cleaned_root / "flan" / flan[0].removeprefix("flan__"), rows)
    lines.clear()
    assert materialize_sources(defs, instance, ["flan"], log=lines.append) == ["flan"]
    assert "FAILED" in lines[0]

    assert materialize_main(["no_such_source"]) == 2
    assert "'no_such_source' is not a tokenized asset" in capsys.readouterr().err


def test_a_batched_run_groups_its_records_on_the_local_storage(
    any_instance, data_paths, real_raw, monkeypatch
):
    from hrm_assets.dagster_internals.event_log import PooledSqliteEventLogStorage

    entered = []
    grouped_commits = PooledSqliteEventLogStorage.grouped_commits

    def spy(storage):
        entered.append(storage)
        return grouped_commits(storage)

    monkeypatch.setattr(PooledSqliteEventLogStorage, "grouped_commits", spy)
    keys = register_flan(any_instance, data_paths, real_raw)
    assert run_all(any_instance, data_paths).success
    pooled = isinstance(any_instance.event_log_storage, PooledSqliteEventLogStorage)
    assert entered == ([any_instance.event_log_storage] if pooled else [])
    assert sorted(latest_records(any_instance)) == sorted(keys)
