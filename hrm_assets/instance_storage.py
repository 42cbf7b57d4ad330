"""The local Dagster instance's SQLite storage, with its database connections kept open.

Dagster's SQLite event log opens a new connection (and a new SQLAlchemy engine) for every
statement and disposes of it afterwards; closing the last connection to a WAL database
checkpoints it, so every event pays for an open, a checkpoint and a close. A run that records
thousands of partitions spent most of its time there: 2,000 partitions, each with a
materialization and two check evaluations, took 520 s in one run with the stock storage and
52 s with connections kept open (the same events, on this 2-core machine). This storage is the
stock one with one pooled connection per database file (the busiest few kept open, the rest
closed), and the index's table list cached (it only changes when the schema is migrated).

Its commits are synced at WAL checkpoints, not one by one (``synchronous=NORMAL``): a commit
survives any crash of a process, and a power cut may lose the last ones but never corrupts the
database. A step that records thousands of events can group them (:func:`grouped_commits`):
its writes then share one transaction per database, committed every ``GROUP_SECONDS`` and when
the group ends, each write in a savepoint of its own so that a failing one undoes only itself;
a crash loses the group's uncommitted records, never an output (the next run records it again).
Everything else (schema, files, concurrency between processes through SQLite's own locking) is
Dagster's. ``dagster_home/dagster.yaml`` selects it:

    storage:
      custom:
        module: hrm_assets.instance_storage
        class: PooledSqliteStorage
        config:
          base_dir: {env: DAGSTER_HOME}
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator

from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._core.storage.event_log.schema import AssetCheckExecutionsTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.schedules import SqliteScheduleStorage
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData, serialize_value
from dagster._utils import mkdir_p
from dagster_shared.record import copy
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

# Database files whose connection stays open: the index and the runs being written or read.
OPEN_DATABASES = 8
# A group of writes is committed at least this often: what a crash can lose of a step's records
# (never its outputs), and the longest another process waits to write to the same database.
GROUP_SECONDS = 0.5


def _commit_without_fsync(dbapi_connection, _record) -> None:
    # The databases are in WAL mode, where synchronous=NORMAL syncs at checkpoints only: a commit
    # survives any crash of a process (kill -9 included) and the database is never corrupted;
    # a power cut can lose the last commits. The default (FULL) syncs every commit, about three
    # fsyncs per event: 10.7 ms an event against 3.8 ms here.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class _CommitGroup:
    """The open transaction of each database a group of writes went to."""

    def __init__(self) -> None:
        self.open: dict[str, Connection] = {}
        self.started = time.monotonic()

    def connection(self, shard: str, engine: Engine) -> Connection:
        connection = self.open.get(shard)
        if connection is None:
            connection = engine.connect()
            # pysqlite begins transactions itself, and not before a SAVEPOINT: SQLAlchemy's
            # recipe for savepoints on SQLite is to switch that off and BEGIN explicitly. Only
            # for this connection: elsewhere Dagster's DDL must not run inside a transaction.
            connection.connection.driver_connection.isolation_level = None
            connection.exec_driver_sql("BEGIN")
            self.open[shard] = connection
        return connection

    def commit_if_due(self) -> None:
        if time.monotonic() - self.started >= GROUP_SECONDS:
            self.commit()

    def commit(self) -> None:
        # Release every connection even if a commit fails; the first error is raised.
        connections, self.open = self.open, {}
        self.started = time.monotonic()
        with contextlib.ExitStack() as closing:
            for connection in connections.values():
                closing.callback(connection.close)
                closing.callback(_restore_default_transactions, connection)
                closing.callback(connection.commit)


def _restore_default_transactions(connection: Connection) -> None:
    connection.connection.driver_connection.isolation_level = ""


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log, with a pooled connection per database file."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._tables: dict[str, bool] = {}
        self._group: _CommitGroup | None = None
        super().__init__(base_dir, inst_data)

    def _engine(self, shard: str) -> Engine:
        with self._engines_lock:
            engine = self._engines.get(shard)
            if engine is not None:
                self._engines.move_to_end(shard)
                return engine
            engine = create_engine(
                self.conn_string_for_shard(shard),
                poolclass=QueuePool,
                pool_size=1,
                max_overflow=4,
                # The storage's own lock serialises its use across threads.
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            event.listen(engine, "connect", _commit_without_fsync)
            self._engines[shard] = engine
            while len(self._engines) > OPEN_DATABASES:
                _, oldest = self._engines.popitem(last=False)
                oldest.dispose()
            return engine

    @contextlib.contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            if self._group is None:
                with engine.connect() as connection, connection.begin():
                    yield connection
                return
            connection = self._group.connection(shard, engine)
            with connection.begin_nested():
                yield connection
            self._group.commit_if_due()

    @contextlib.contextmanager
    def grouped_commits(self) -> Iterator[None]:
        """Within: this storage's writes are committed in groups (see the module docstring).
        Reads see the group's writes. Not reentrant."""
        with self._db_lock:
            if self._group is not None:
                raise RuntimeError("grouped_commits is not reentrant")
            group = self._group = _CommitGroup()
        try:
            yield
        finally:
            with self._db_lock:
                self._group = None
                group.commit()

    @property
    def supports_partition_subset_in_asset_materialization_planned_events(self) -> bool:
        # A run over 2,000 partitions then writes one "planned" event, not 2,000 (~25 s here).
        # Dagster marks a failed run's partitions as failed from per-partition planned events,
        # so the tokenized assets write those for the files that failed (records.py).
        return True

    def _store_asset_check_evaluation_planned(self, event, event_id: int | None) -> None:
        # Dagster stores one row per planned partition, each holding the whole event with the
        # run's whole partition subset: quadratic (2,000 partitions: 15 s and ~120 MB per check
        # and run). Each row here holds the event narrowed to its own partition.
        planned = event.dagster_event.event_specific_data
        subset = planned.partitions_subset
        rows = []
        for partition in subset.get_partition_keys() if subset is not None else [None]:
            own = event
            if partition is not None:
                narrowed = copy(
                    planned,
                    partitions_subset=subset.empty_subset().with_partition_keys([partition]),
                )
                own = event._replace(
                    dagster_event=event.dagster_event._replace(event_specific_data=narrowed)
                )
            rows.append(
                dict(
                    asset_key=planned.asset_key.to_string(),
                    check_name=planned.check_name,
                    partition=partition,
                    run_id=event.run_id,
                    execution_status=AssetCheckExecutionRecordStatus.PLANNED.value,
                    evaluation_event=serialize_value(own),
                    evaluation_event_timestamp=self._event_insert_timestamp(event),
                    evaluation_event_storage_id=event_id,
                )
            )
        with self.index_connection() as connection:
            connection.execute(AssetCheckExecutionsTable.insert().values(rows))

    def has_table(self, table_name: str) -> bool:
        found = self._tables.get(table_name)
        if found is None:
            found = self._tables[table_name] = super().has_table(table_name)
        return found

    def upgrade(self) -> None:
        self._tables.clear()
        super().upgrade()
        self._tables.clear()

    def delete_events(self, run_id: str) -> None:
        self._close(run_id)
        super().delete_events(run_id)

    def wipe(self) -> None:
        for shard in list(self._engines):
            self._close(shard)
        super().wipe()

    def dispose(self) -> None:
        for shard in list(self._engines):
            self._close(shard)
        super().dispose()

    def _close(self, shard: str) -> None:
        with self._engines_lock:
            engine = self._engines.pop(shard, None)
        if engine is not None:
            engine.dispose()


class PooledSqliteStorage(DagsterSqliteStorage):
    """``storage: sqlite`` with :class:`PooledSqliteEventLogStorage` as its event log."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        # DagsterSqliteStorage.__init__ would also open a stock event log; build ours instead.
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = PooledSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value
    ) -> PooledSqliteStorage:
        base_dir = config_value.get("base_dir") or os.environ["DAGSTER_HOME"]
        mkdir_p(base_dir)
        return cls(base_dir, inst_data=inst_data)
