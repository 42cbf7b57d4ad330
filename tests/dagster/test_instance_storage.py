"""The local instance's SQLite storage with pooled connections (hrm_assets/instance_storage.py):
the same records as Dagster's own SQLite storage, visible to other instances at once, with a
bounded number of open database files."""

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef
from support.instance_config import write_config

from hrm_assets.instance_storage import OPEN_DATABASES, PooledSqliteEventLogStorage

PARTITIONS = dg.StaticPartitionsDefinition([f"p{index}" for index in range(OPEN_DATABASES + 3)])


@dg.asset(partitions_def=PARTITIONS)
def numbers(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"partition": context.partition_key})


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    write_config(home, home)
    return home


def test_runs_are_recorded_and_seen_by_another_instance(home):
    writer = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    assert isinstance(writer.event_log_storage, PooledSqliteEventLogStorage)
    for key in PARTITIONS.get_partition_keys():
        assert dg.materialize([numbers], instance=writer, partition_key=key).success
    reader = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    records = reader.fetch_materializations(dg.AssetKey("numbers"), limit=100).records
    assert sorted(r.partition_key for r in records) == sorted(PARTITIONS.get_partition_keys())
    assert len(reader.get_runs()) == len(PARTITIONS.get_partition_keys())
    # Open database files stay bounded however many runs were written.
    assert len(writer.event_log_storage._engines) <= OPEN_DATABASES
    run_id = records[0].run_id
    writer.delete_run(run_id)
    assert run_id not in {r.run_id for r in reader.get_runs()}
    writer.dispose()
    reader.dispose()


def test_the_project_instance_uses_it(monkeypatch, tmp_path):
    from hrm_assets.common.settings import PROJECT_ROOT

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text(
        (PROJECT_ROOT / "dagster_home" / "dagster.yaml").read_text()
    )
    instance = dg.DagsterInstance.get()
    assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
    assert instance.event_log_storage._base_dir.startswith(str(tmp_path))
    instance.dispose()


RANGE = dg.StaticPartitionsDefinition(["a", "b", "c"])


@dg.multi_asset(
    specs=[dg.AssetSpec("ranged", partitions_def=RANGE, skippable=True)],
    check_specs=[dg.AssetCheckSpec("sane", asset="ranged", partitions_def=RANGE)],
    backfill_policy=dg.BackfillPolicy.single_run(),
    can_subset=True,
)
def ranged(context: dg.AssetExecutionContext):
    raise dg.Failure("planned, never evaluated")


def test_a_range_run_plans_one_event_and_one_small_check_row_per_partition(home):
    from dagster._core.storage.event_log.schema import AssetCheckExecutionsTable
    from dagster._serdes import deserialize_value

    instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    job = dg.Definitions(assets=[ranged]).resolve_implicit_global_asset_job_def()
    tags = {"dagster/asset_partition_range_start": "a", "dagster/asset_partition_range_end": "c"}
    result = job.execute_in_process(instance=instance, tags=tags, raise_on_error=False)
    assert not result.success
    planned = instance.get_records_for_run(
        result.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED
    ).records
    assert len(planned) == 1  # the run's subset, not one event per partition
    with instance.event_log_storage.index_connection() as connection:
        rows = connection.execute(AssetCheckExecutionsTable.select()).fetchall()
    assert sorted(row.partition for row in rows) == ["a", "b", "c"]
    for row in rows:
        event = deserialize_value(row.evaluation_event)
        keys = event.dagster_event.event_specific_data.partitions_subset.get_partition_keys()
        assert list(keys) == [row.partition]  # its own partition, not the run's whole subset
    instance.dispose()


def _report(instance, asset: str, partition: str) -> None:
    instance.report_runless_asset_event(dg.AssetMaterialization(asset, partition=partition))


def _materialized(instance, asset: str) -> list[str]:
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=100).records
    return sorted(record.partition_key for record in records)


def test_grouped_commits_are_read_back_at_once_and_committed_when_the_group_ends(home):
    writer = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    reader = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    with writer.event_log_storage.grouped_commits():
        for partition in ("a", "b"):
            _report(writer, "grouped", partition)
        # The group's own reads see its writes; another process's do not, until it commits.
        assert _materialized(writer, "grouped") == ["a", "b"]
        assert _materialized(reader, "grouped") == []
    assert _materialized(reader, "grouped") == ["a", "b"]
    # Outside a group, every write is committed at once again.
    _report(writer, "grouped", "c")
    assert _materialized(reader, "grouped") == ["a", "b", "c"]
    writer.dispose()
    reader.dispose()


def test_a_group_commits_every_group_seconds(home, monkeypatch):
    import hrm_assets.instance_storage as instance_storage

    monkeypatch.setattr(instance_storage, "GROUP_SECONDS", 0.0)  # due at every write
    writer = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    reader = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    with writer.event_log_storage.grouped_commits():
        _report(writer, "timed", "a")
        assert _materialized(reader, "timed") == ["a"]
    writer.dispose()
    reader.dispose()


def test_a_failing_write_in_a_group_undoes_only_itself(home):
    from dagster._core.storage.event_log.schema import SqlEventLogStorageTable

    writer = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    storage = writer.event_log_storage
    with storage.grouped_commits():
        _report(writer, "kept", "a")
        with pytest.raises(RuntimeError, match="half-done"):
            with storage.index_connection() as connection:
                connection.execute(SqlEventLogStorageTable.delete())  # undone by its savepoint
                raise RuntimeError("half-done")
        _report(writer, "kept", "b")
    reader = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    assert _materialized(reader, "kept") == ["a", "b"]
    with pytest.raises(RuntimeError, match="not reentrant"):
        with storage.grouped_commits(), storage.grouped_commits():
            pass
    writer.dispose()
    reader.dispose()


def test_a_killed_group_loses_its_uncommitted_records_and_nothing_else(home):
    import multiprocessing
    import os
    import signal

    writer = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    _report(writer, "killed", "before")
    writer.dispose()
    ready = multiprocessing.get_context("fork").Event()

    def write_then_hang() -> None:
        instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
        with instance.event_log_storage.grouped_commits():
            _report(instance, "killed", "in-group")
            ready.set()
            signal.pause()

    child = multiprocessing.get_context("fork").Process(target=write_then_hang)
    child.start()
    assert ready.wait(60)
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    reader = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    assert _materialized(reader, "killed") == ["before"]
    # The database took no harm: it is written and read as before.
    _report(reader, "killed", "after")
    assert _materialized(reader, "killed") == ["after", "before"]
    reader.dispose()
