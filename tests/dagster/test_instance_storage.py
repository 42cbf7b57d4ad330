"""The local instance's SQLite storage with pooled connections (hrm_assets/dagster_internals/):
the same records as Dagster's own SQLite storage, visible to other instances at once, with a
bounded number of open database files."""

import os

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef
from support.instance_config import write_config

from hrm_assets.dagster_internals import sqlite_connections
from hrm_assets.dagster_internals.event_log import OPEN_DATABASES, PooledSqliteEventLogStorage
from hrm_assets.dagster_internals.run_storage import PooledSqliteRunStorage

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
    assert isinstance(writer.run_storage, PooledSqliteRunStorage)
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


def test_a_range_run_plans_one_event_and_one_small_check_row_per_partition(home, monkeypatch):
    from dagster._core.storage.event_log.schema import AssetCheckExecutionsTable
    from dagster._serdes import deserialize_value, serialize_value

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
    # Each row's event is written from one serialized with a stand-in key: exactly what
    # serializing the narrowed event gives, whatever the key's characters.
    from hrm_assets.dagster_internals.planned_checks import narrowed, narrowed_events

    (planned, *_) = instance.get_records_for_run(
        result.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED
    ).records
    keys = ["a", 'quo"ted\\back', "ünïcode ✓", "tab\tnew\nline", "{}[]:,"]
    serialized = narrowed_events(planned.event_log_entry, keys)
    # Not called once a key:
    monkeypatch.setattr("hrm_assets.dagster_internals.planned_checks.serialize_value", None)
    for key in keys:
        assert serialized(key) == serialize_value(narrowed(planned.event_log_entry, key))
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
    monkeypatch.setattr(sqlite_connections, "GROUP_SECONDS", 0.0)  # due at every write
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


def test_a_killed_group_loses_its_uncommitted_records_and_nothing_else(home, monkeypatch):
    import multiprocessing
    import os
    import signal

    # The group is never due in the child: on a loaded machine the half second between
    # commits can pass before its record is written, which would commit it.
    monkeypatch.setattr(sqlite_connections, "GROUP_SECONDS", float("inf"))
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


BATCHED = dg.StaticPartitionsDefinition(["x", "y", "z"])


@dg.multi_asset(
    specs=[
        dg.AssetSpec("batched", partitions_def=BATCHED, skippable=True),
        dg.AssetSpec("beside", partitions_def=BATCHED, skippable=True),
    ],
    check_specs=[dg.AssetCheckSpec("fine", asset="batched", partitions_def=BATCHED)],
    backfill_policy=dg.BackfillPolicy.single_run(),
    can_subset=True,
)
def batched(context: dg.AssetExecutionContext):
    from dagster._core.definitions.data_version import DATA_VERSION_TAG

    for attempt in (1, 2):  # each partition twice: its latest record is the second
        for key in context.partition_keys:
            version = f"{key}{attempt}"
            for asset in ("batched", "beside"):
                yield dg.AssetMaterialization(
                    asset, partition=key, metadata={"n": attempt}, tags={DATA_VERSION_TAG: version}
                )
    for key in context.partition_keys:
        yield dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey("batched"), check_name="fine", passed=key != "y", partition=key
        )


def _run_events(instance) -> list:
    """The events of a run of ``batched`` over every partition, in the order stored; then its
    evaluations again as another run's, which planned none."""
    job = dg.Definitions(assets=[batched]).resolve_implicit_global_asset_job_def()
    tags = {"dagster/asset_partition_range_start": "x", "dagster/asset_partition_range_end": "z"}
    result = job.execute_in_process(instance=instance, tags=tags)
    events = [r.event_log_entry for r in instance.get_records_for_run(result.run_id).records]
    unplanned = [
        event._replace(run_id="unplanned-run")
        for event in events
        if event.dagster_event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
    ]
    return events + unplanned


def _tables(storage, run_ids) -> dict[str, list[tuple]]:
    """Every row of every table of the index and of each run's database, without the columns
    the database stamps with its own clock."""
    import sqlalchemy as sa

    def rows(connection) -> dict[str, list[tuple]]:
        found = {}
        metadata = sa.MetaData()
        metadata.reflect(bind=connection)
        for name, table in sorted(metadata.tables.items()):
            columns = [
                c for c in table.c if c.name not in ("create_timestamp", "migration_completed")
            ]
            query = sa.select(*columns).order_by(*table.primary_key.columns)
            found[name] = [tuple(row) for row in connection.execute(query)]
        return found

    with storage.index_connection() as connection:
        tables = rows(connection)
    for run_id in run_ids:
        with storage.run_connection(run_id) as connection:
            tables.update({f"{run_id} {name}": found for name, found in rows(connection).items()})
    return tables


def _fresh(tmp_path, name):
    home = tmp_path / name
    home.mkdir()
    write_config(home, home)
    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))


def test_a_batch_writes_exactly_the_rows_storing_each_event_writes(home, tmp_path, monkeypatch):
    source = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    events = _run_events(source)
    run_ids = sorted({event.run_id for event in events})
    one_by_one, in_batches = _fresh(tmp_path, "one_by_one"), _fresh(tmp_path, "in_batches")
    for event in events:
        one_by_one.event_log_storage.store_event(event)
    sizes = []
    write_batch = PooledSqliteEventLogStorage._write_batch

    def counted(storage, run_id, batch):
        sizes.append(len(batch))
        write_batch(storage, run_id, batch)

    monkeypatch.setattr(PooledSqliteEventLogStorage, "_write_batch", counted)
    half = len(events) // 2  # the second batch updates rows the first one wrote
    in_batches.event_log_storage.store_event_batch(events[:half])
    in_batches.event_log_storage.store_event_batch(events[half:])
    # The 12 materializations and 6 evaluations went in batches, not one by one.
    assert max(sizes) > 1 and sum(sizes) == 18

    expected = _tables(one_by_one.event_log_storage, run_ids)
    assert _tables(in_batches.event_log_storage, run_ids) == expected
    assert len(expected["asset_keys"]) == 2 and len(expected["asset_event_tags"]) == 12
    statuses = sorted((row[4], row[3], row[5]) for row in expected["asset_check_executions"])
    assert [status for *_, status in statuses] == ["SUCCEEDED", "FAILED", "SUCCEEDED"] * 2
    # What Dagster's reads make of them: the latest record of each partition, the checks'.
    latest = in_batches.event_log_storage.get_latest_storage_id_by_partition(
        dg.AssetKey("batched"), dg.DagsterEventType.ASSET_MATERIALIZATION
    )
    assert latest == one_by_one.event_log_storage.get_latest_storage_id_by_partition(
        dg.AssetKey("batched"), dg.DagsterEventType.ASSET_MATERIALIZATION
    )
    check = dg.AssetCheckKey(dg.AssetKey("batched"), "fine")
    infos = [
        sorted(instance.event_log_storage.get_asset_check_partition_info([check]), key=str)
        for instance in (one_by_one, in_batches)
    ]
    assert infos[0] == infos[1]
    assert [info.latest_execution_status.value for info in infos[1]] == [
        "SUCCEEDED",
        "FAILED",
        "SUCCEEDED",
    ]
    for instance in (source, one_by_one, in_batches):
        instance.dispose()


def test_a_failing_batch_is_written_event_by_event(home, tmp_path, monkeypatch):
    source = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    events = _run_events(source)
    run_ids = sorted({event.run_id for event in events})
    one_by_one, in_batches = _fresh(tmp_path, "one_by_one"), _fresh(tmp_path, "in_batches")
    for event in events:
        one_by_one.event_log_storage.store_event(event)
    write_batch = PooledSqliteEventLogStorage._write_batch

    def only_one_at_a_time(storage, run_id, batch):
        if len(batch) > 1:
            raise RuntimeError("batch refused")
        write_batch(storage, run_id, batch)

    monkeypatch.setattr(PooledSqliteEventLogStorage, "_write_batch", only_one_at_a_time)
    in_batches.event_log_storage.store_event_batch(events)
    assert _tables(in_batches.event_log_storage, run_ids) == _tables(
        one_by_one.event_log_storage, run_ids
    )

    def refuse_all(storage, run_id, batch):
        raise RuntimeError("write refused")

    monkeypatch.setattr(PooledSqliteEventLogStorage, "_write_batch", refuse_all)
    with pytest.raises(RuntimeError, match="write refused"):
        in_batches.event_log_storage.store_event_batch(events[-2:])
    for instance in (source, one_by_one, in_batches):
        instance.dispose()


def test_a_group_holds_a_runs_records_until_read_or_due(home, tmp_path, monkeypatch):
    source = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    events = _run_events(source)
    materialized = [
        event
        for event in events
        if event.dagster_event_type == dg.DagsterEventType.ASSET_MATERIALIZATION
        and event.dagster_event.asset_key == dg.AssetKey("batched")
    ]
    writer = _fresh(tmp_path, "writer")
    reader = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path / "writer")))
    storage = writer.event_log_storage
    monkeypatch.setattr(sqlite_connections, "GROUP_SECONDS", 60.0)  # never due on a slow machine
    with storage.grouped_commits():
        for event in materialized[:3]:
            storage.store_event(event)
        # Held: the group's own reads write them first; other processes see them at commit.
        assert _materialized(writer, "batched") == ["x", "y", "z"]
        assert _materialized(reader, "batched") == []
    assert _materialized(reader, "batched") == ["x", "y", "z"]

    monkeypatch.setattr(sqlite_connections, "GROUP_SECONDS", 0.0)  # due at every write
    with storage.grouped_commits():
        for event in materialized[3:]:
            storage.store_event(event)
            assert _materialized(reader, "batched").count(event.dagster_event.partition) == 2
    for instance in (source, writer, reader):
        instance.dispose()


def test_check_targets_are_read_from_the_stored_json_as_dagster_reads_them(home):
    from hrm_assets.defs.tokenized.records import targets_from_records

    instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    _run_events(instance)
    key, partitions = dg.AssetKey("batched"), ["x", "y", "z", "never materialized"]
    targets = instance.event_log_storage.latest_materialization_targets(key, partitions)
    assert targets == targets_from_records(instance, key, partitions)
    assert sorted(targets) == ["x", "y", "z"]
    assert instance.event_log_storage.latest_materialization_targets(key, ["none"]) == {}
    instance.dispose()


def test_a_new_runs_database_is_the_one_dagster_initializes(home, tmp_path, monkeypatch):
    import sqlite3

    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    def layout(path) -> tuple:
        with sqlite3.connect(path) as connection:
            return (
                sorted(connection.execute("SELECT type, name, sql FROM sqlite_master")),
                connection.execute("SELECT version_num FROM alembic_version").fetchall(),
                connection.execute("PRAGMA journal_mode").fetchall(),
            )

    instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    storage = instance.event_log_storage
    with storage.index_connection():
        pass
    initialized = []
    initdb = PooledSqliteEventLogStorage._initdb
    monkeypatch.setattr(
        PooledSqliteEventLogStorage,
        "_initdb",
        lambda self, engine, **kwargs: initialized.append(engine) or initdb(self, engine, **kwargs),
    )
    for run_id in ("first-run", "second-run"):
        with storage.run_connection(run_id):
            pass
    assert len(initialized) == 1  # the empty database, copied for each run
    monkeypatch.undo()
    stock = SqliteEventLogStorage(str(tmp_path / "stock"))
    with stock.run_connection("first-run"):
        pass
    expected = layout(stock.path_for_shard("first-run"))
    assert expected[1] and expected[2] == [("wal",)]
    for run_id in ("first-run", "second-run"):
        assert layout(storage.path_for_shard(run_id)) == expected
    assert not [name for name in os.listdir(storage._base_dir) if name.endswith(".staged")]
    instance.dispose()
    stock.dispose()


def test_the_internals_are_written_for_the_pinned_dagster():
    import re

    from hrm_assets.common.settings import PROJECT_ROOT
    from hrm_assets.dagster_internals import TESTED, WRITTEN_FOR

    pins = {
        re.search(r"^\s*\"?dagster==([\d.]+)", text, re.M).group(1)
        for text in (
            (PROJECT_ROOT / "pyproject.toml").read_text(),
            (PROJECT_ROOT / "constraints.txt").read_text(),
        )
    }
    assert pins == {WRITTEN_FOR} and TESTED == (dg.__version__ == WRITTEN_FOR)


def test_an_instance_written_before_the_move_still_loads(tmp_path):
    home = tmp_path / "old"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        "storage:\n  custom:\n    module: hrm_assets.instance_storage\n"
        f"    class: PooledSqliteStorage\n    config:\n      base_dir: {home}\n"
    )
    instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
    assert dg.materialize([numbers], instance=instance, partition_key="p0").success
    instance.dispose()


# Another Dagster release, simulated before anything of the project is imported: the project's
# storage configuration and executor give Dagster's own, with one warning, and a run works.
_ANOTHER_DAGSTER = """
import json, sys, warnings
import dagster as dg
dg.__version__ = "1.99.0"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from hrm_assets.defs.common.executor import MULTIPROCESS_EXECUTOR
    from hrm_assets.dagster_internals import executor, instance, partition_records
    import hrm_assets.instance_storage
from dagster._core.instance.ref import InstanceRef

@dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a"]))
def numbers(context):
    return dg.MaterializeResult(metadata={"partition": context.partition_key})

home = sys.argv[1]
loaded = dg.DagsterInstance.from_ref(InstanceRef.from_dir(home))
ran = dg.materialize([numbers], instance=loaded, partition_key="a").success
targets = partition_records.latest_materialization_targets(loaded, dg.AssetKey("numbers"), ["a"])
print(json.dumps({
    "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
    "storages": [
        f"{type(storage).__module__}.{type(storage).__name__}"
        for storage in (loaded.event_log_storage, loaded.run_storage)
    ],
    "own_executor": executor.multiprocess_executor() is dg.multiprocess_executor,
    "grouped": type(partition_records.grouped_records(loaded)).__name__,
    "ran": ran,
    "targets": sorted(targets),
}))
"""


def test_another_dagster_release_gets_dagsters_own_storage_and_executor(home):
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _ANOTHER_DAGSTER, str(home)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "DAGSTER_HOME": str(home)},
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    (warning,) = found.pop("warnings")
    assert warning.startswith("UntestedDagsterWarning: hrm_assets.dagster_internals was written")
    assert "found 1.99.0" in warning
    assert found == {
        "storages": [
            "dagster._core.storage.event_log.sqlite.sqlite_event_log.SqliteEventLogStorage",
            "dagster._core.storage.runs.sqlite.sqlite_run_storage.SqliteRunStorage",
        ],
        "own_executor": True,
        "grouped": "nullcontext",
        "ran": True,
        "targets": ["a"],
    }
