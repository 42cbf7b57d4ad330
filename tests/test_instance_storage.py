"""The local instance's SQLite storage with pooled connections (hrm_assets/instance_storage.py):
the same records as Dagster's own SQLite storage, visible to other instances at once, with a
bounded number of open database files."""

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

from hrm_assets.instance_storage import OPEN_DATABASES, PooledSqliteEventLogStorage

PARTITIONS = dg.StaticPartitionsDefinition([f"p{index}" for index in range(OPEN_DATABASES + 3)])


@dg.asset(partitions_def=PARTITIONS)
def numbers(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"partition": context.partition_key})


def write_config(home, base_dir) -> None:
    (home / "dagster.yaml").write_text(
        "storage:\n  custom:\n    module: hrm_assets.instance_storage\n"
        f"    class: PooledSqliteStorage\n    config:\n      base_dir: {base_dir}\n"
        "telemetry:\n  enabled: false\n"
    )


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
    from hrm_assets.settings import PROJECT_ROOT

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text(
        (PROJECT_ROOT / "dagster_home" / "dagster.yaml").read_text()
    )
    instance = dg.DagsterInstance.get()
    assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
    assert instance.event_log_storage._base_dir.startswith(str(tmp_path))
    instance.dispose()
