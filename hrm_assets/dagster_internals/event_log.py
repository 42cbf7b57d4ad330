"""Dagster's SQLite event log with its database connections kept open, and records batched.

Dagster's SQLite event log opens a new connection (and a new SQLAlchemy engine) for every
statement and disposes of it afterwards; closing the last connection to a WAL database
checkpoints it, so every event pays for an open, a checkpoint and a close. A run that records
thousands of partitions spent most of its time there: 2,000 partitions, each with a
materialization and two check evaluations, took 520 s in one run with the stock storage and
52 s with connections kept open (the same events, on this 2-core machine). This storage is the
stock one with one pooled connection per database file (the busiest few kept open, the rest
closed), and the index's table list cached (it only changes when the schema is migrated).

Within a group of commits (:meth:`PooledSqliteEventLogStorage.grouped_commits`, see
``sqlite_connections``) each write is in a savepoint of its own so that a failing one undoes
only itself, and a run's materializations and partition check evaluations are written in
batches (:meth:`PooledSqliteEventLogStorage.store_event_batch`: one statement per table for many
events, each event serialized once), held until ``EVENTS_PER_BATCH`` wait, the group is due to
commit, or anything else touches the storage (so reads still see every write). A new run's
database is copied from an empty one initialized once per process. It overrides private methods
of Dagster 1.13's ``SqliteEventLogStorage`` and writes the rows Dagster's ``store_event`` writes:
it is used only on the Dagster version the package was written for (``dagster_internals``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence

from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.asset_key import AssetKey
from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._core.storage.event_log.schema import (
    AssetCheckExecutionsTable,
    AssetKeyTable,
    SqlEventLogStorageTable,
)
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy import bindparam, create_engine, func, select
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool, QueuePool

from hrm_assets.dagster_internals.interface import BatchedRecordStorage
from hrm_assets.dagster_internals.planned_checks import narrowed_events
from hrm_assets.dagster_internals.sqlite_connections import CommitGroup, commit_without_fsync

# Database files whose connection stays open: the index and the runs being written or read.
OPEN_DATABASES = 8
# Events held for one batched write within a group (the tokenized step looks its materializations
# up every 256 partitions, which writes what is held first).
EVENTS_PER_BATCH = 1024


def _batchable(event: EventLogEntry) -> bool:
    """Whether :meth:`PooledSqliteEventLogStorage.store_event_batch` writes ``event`` in bulk:
    a run's materialization, or a run's check evaluation of one partition (whose planned row the
    unique index on asset, check, run and partition makes the only one to update)."""
    dagster_event = event.dagster_event
    if not event.run_id or dagster_event is None:
        return False
    if dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
        return dagster_event.asset_key is not None
    if dagster_event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
        return dagster_event.event_specific_data.partition is not None
    return False


def _check_status(passed: bool) -> str:
    status = AssetCheckExecutionRecordStatus
    return (status.SUCCEEDED if passed else status.FAILED).value


class PooledSqliteEventLogStorage(SqliteEventLogStorage, BatchedRecordStorage):
    """Dagster's SQLite event log, with a pooled connection per database file."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._tables: dict[str, bool] = {}
        self._group: CommitGroup | None = None
        # Events held for a batched write (within a group only), in the order they came.
        self._held: list[EventLogEntry] = []
        self._asset_key_index_cols: bool | None = None
        self._empty_run_database: bytes | None = None
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
            sqlalchemy_event.listen(engine, "connect", commit_without_fsync)
            self._engines[shard] = engine
            while len(self._engines) > OPEN_DATABASES:
                _, oldest = self._engines.popitem(last=False)
                oldest.dispose()
            return engine

    @contextlib.contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            # Whatever comes next (a read above all) sees the events held so far.
            self._write_held()
            with self._transactions(shard) as (connection,):
                yield connection
            if self._group is not None:
                self._group.commit_if_due()

    @contextlib.contextmanager
    def _transactions(self, *shards: str) -> Iterator[list[Connection]]:
        """A connection to each shard in a transaction of its own (in a group: a savepoint of
        the group's transaction), all committed if the block succeeds, none if it raises. The
        caller holds ``_db_lock``."""
        with contextlib.ExitStack() as stack:
            connections = []
            for shard in shards:
                engine = self._engine(shard)
                if shard not in self._initialized_dbs:
                    self._init_shard(shard, engine)
                    self._initialized_dbs.add(shard)
                if self._group is None:
                    connection = stack.enter_context(engine.connect())
                    stack.enter_context(connection.begin())
                else:
                    connection = self._group.connection(shard, engine)
                    stack.enter_context(connection.begin_nested())
                connections.append(connection)
            yield connections

    def _init_shard(self, shard: str, engine: Engine) -> None:
        # A new run's database starts as a copy of an empty one, initialized once per process:
        # Dagster's initialization (every table created, alembic reading its scripts to stamp
        # the revision) took ~0.5 s a run, most of a one-file source's run.
        path = self.path_for_shard(shard)
        if shard == INDEX_SHARD_NAME or os.path.exists(path) or not self._copy_empty_run(path):
            self._initdb(engine)

    def _copy_empty_run(self, path: str) -> bool:
        """Create ``path`` as a copy of an empty run database, unless it exists by then
        (another process made it; Dagster's initialization checks it) or cannot be linked."""
        if self._empty_run_database is None:
            with tempfile.TemporaryDirectory(prefix="hrm-empty-run-") as folder:
                empty = os.path.join(folder, "empty.db")
                engine = create_engine(f"sqlite:///{empty}", poolclass=NullPool)
                self._initdb(engine)
                engine.dispose()  # its last connection closed: the WAL checkpointed into it
                with open(empty, "rb") as handle:
                    self._empty_run_database = handle.read()
        staged = f"{path}.{os.getpid()}.staged"
        with open(staged, "wb") as handle:
            handle.write(self._empty_run_database)
        try:
            os.link(staged, path)  # never replaces a database another process created
        except OSError:
            return False
        finally:
            os.unlink(staged)
        return True

    @contextlib.contextmanager
    def grouped_commits(self) -> Iterator[None]:
        """Within: this storage's writes are committed in groups, and a run's materializations
        and partition check evaluations written in batches (see the module docstring). Reads see
        the group's writes. Not reentrant."""
        with self._db_lock:
            if self._group is not None:
                raise RuntimeError("grouped_commits is not reentrant")
            group = self._group = CommitGroup()
        try:
            yield
        finally:
            with self._db_lock:
                try:
                    self._write_held()
                finally:
                    self._group = None
                    group.commit()

    def store_event(self, event: EventLogEntry) -> None:
        with self._db_lock:
            held = self._group is not None and _batchable(event)
            if held:
                self._held.append(event)
                if len(self._held) >= EVENTS_PER_BATCH or self._group.due():
                    self._write_held()
                    self._group.commit_if_due()
        if not held:
            super().store_event(event)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Store ``events`` in order with exactly the rows :meth:`store_event` writes for each
        (the event in its run's database and the index, the asset's tags and latest
        materialization, the check's execution row). A run's consecutive materializations and
        partition check evaluations are written together: one statement per table, each event
        serialized once; other events one by one."""
        with self._db_lock:
            self._write_held()
        for event in events:
            if _batchable(event):
                with self._db_lock:
                    self._held.append(event)
            else:
                super().store_event(event)  # writes what is held first, so the order holds
        with self._db_lock:
            self._write_held()

    def _write_held(self) -> None:
        """Write the held events, one batch per run in turn; if a batch fails, its events one
        by one (what Dagster does when ``store_event_batch`` fails), raising the first error.
        The caller holds ``_db_lock``."""
        held, self._held = self._held, []
        for run_id, grouped in itertools.groupby(held, key=lambda event: event.run_id):
            batch = list(grouped)
            try:
                self._write_batch(run_id, batch)
            except Exception:
                if len(batch) == 1:
                    raise
                first_error = None
                for event in batch:
                    try:
                        self._write_batch(run_id, [event])
                    except Exception as error:
                        first_error = first_error or error
                if first_error is not None:
                    raise first_error from None

    def _write_batch(self, run_id: str, events: list[EventLogEntry]) -> None:
        """The rows ``store_event`` writes for each of ``events`` (all of them batchable, of
        ``run_id``), in both databases at once or not at all."""
        rows = [self._event_to_row(event) for event in events]
        with self._transactions(run_id, INDEX_SHARD_NAME) as (run_connection, index):
            run_connection.execute(SqlEventLogStorageTable.insert(), rows)
            ids = _inserted_ids(index, rows)
            materialized = [
                (event, event_id)
                for event, event_id in zip(events, ids, strict=True)
                if event.dagster_event_type == DagsterEventType.ASSET_MATERIALIZATION
            ]
            if materialized:
                self._store_asset_event_tags(index, *zip(*materialized, strict=True))
                self._store_latest_materializations(index, materialized)
            evaluations = [
                (event, event_id, row)
                for event, event_id, row in zip(events, ids, rows, strict=True)
                if event.dagster_event_type == DagsterEventType.ASSET_CHECK_EVALUATION
            ]
            if evaluations:
                self._store_check_evaluations(index, run_id, evaluations)

    def _store_latest_materializations(
        self, index: Connection, materialized: list[tuple[EventLogEntry, int]]
    ) -> None:
        # Each asset's row ends as storing its materializations one after another leaves it:
        # with the values of the last one (every column a materialization sets, it sets).
        latest = {
            event.dagster_event.asset_key: (event, event_id) for event, event_id in materialized
        }
        index_cols = self._has_asset_key_index_cols_on_connection(index)
        for asset_key, (event, event_id) in latest.items():
            values = self._get_asset_entry_values(event, event_id, index_cols)
            key = asset_key.to_string()
            updated = index.execute(
                AssetKeyTable.update().values(**values).where(AssetKeyTable.c.asset_key == key)
            ).rowcount
            if not updated:
                index.execute(AssetKeyTable.insert().values(asset_key=key, **values))

    def _store_check_evaluations(
        self,
        index: Connection,
        run_id: str,
        evaluations: list[tuple[EventLogEntry, int, dict]],
    ) -> None:
        # Each evaluation completes its planned row (asset, check, run, partition: unique), or
        # is inserted where none was planned, as store_event does; its event serialized once.
        if not self.supports_asset_checks:
            raise RuntimeError("asset checks need a schema migration: `dagster instance migrate`")
        table = AssetCheckExecutionsTable
        keys = ("asset_key", "check_name", "run_id", "partition")
        rows = []
        for event, event_id, event_row in evaluations:
            evaluation = event.dagster_event.event_specific_data
            target = evaluation.target_materialization_data
            rows.append(
                dict(
                    asset_key=evaluation.asset_key.to_string(),
                    check_name=evaluation.check_name,
                    run_id=run_id,
                    partition=evaluation.partition,
                    execution_status=_check_status(evaluation.passed),
                    evaluation_event=event_row["event"],
                    evaluation_event_timestamp=event_row["timestamp"],
                    evaluation_event_storage_id=event_id,
                    materialization_event_storage_id=target.storage_id if target else None,
                )
            )
        # SQLAlchemy reserves the columns' own names for the bound values of a statement.
        update = (
            table.update()
            .where(*(table.c[name] == bindparam(f"key_{name}") for name in keys))
            .values({name: bindparam(f"new_{name}") for name in rows[0] if name not in keys})
        )
        bound = [
            {
                (f"key_{name}" if name in keys else f"new_{name}"): value
                for name, value in row.items()
            }
            for row in rows
        ]
        if index.execute(update, bound).rowcount == len(rows):
            return
        ids = [row["evaluation_event_storage_id"] for row in rows]
        found = select(table.c.evaluation_event_storage_id).where(
            table.c.evaluation_event_storage_id.in_(ids)
        )
        updated = {storage_id for (storage_id,) in index.execute(found)}
        index.execute(
            table.insert(),
            [row for row in rows if row["evaluation_event_storage_id"] not in updated],
        )

    def latest_materialization_targets(
        self, asset_key: AssetKey, partitions: Sequence[str]
    ) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
        """What a check evaluation of each of ``partitions`` refers to: its latest
        materialization (partitions never materialized are left out). The run id and timestamp
        are read from the stored event's JSON; rebuilding whole events took ~3 ms each."""
        latest = self.get_latest_storage_id_by_partition(
            asset_key, DagsterEventType.ASSET_MATERIALIZATION, partitions=set(partitions)
        )
        if not latest:
            return {}
        table = SqlEventLogStorageTable
        query = select(table.c.id, table.c.event).where(table.c.id.in_(list(latest.values())))
        with self.index_connection() as connection:
            events = {
                storage_id: json.loads(text) for storage_id, text in connection.execute(query)
            }
        return {
            partition: AssetCheckEvaluationTargetMaterializationData(
                storage_id=storage_id,
                run_id=events[storage_id]["run_id"],
                timestamp=events[storage_id]["timestamp"],
            )
            for partition, storage_id in latest.items()
            if storage_id in events
        }

    def _has_asset_key_index_cols_on_connection(self, conn: Connection) -> bool:
        # Dagster inspects the table's columns for every materialization it stores; they only
        # change when the schema is migrated.
        if self._asset_key_index_cols is None:
            self._asset_key_index_cols = super()._has_asset_key_index_cols_on_connection(conn)
        return self._asset_key_index_cols

    @property
    def supports_partition_subset_in_asset_materialization_planned_events(self) -> bool:
        # A run over 2,000 partitions then writes one "planned" event, not 2,000 (~25 s here).
        # Dagster marks a failed run's partitions as failed from per-partition planned events,
        # so the tokenized assets write those for the files that failed
        # (partition_records.mark_failed).
        return True

    def _store_asset_check_evaluation_planned(self, event, event_id: int | None) -> None:
        # Dagster stores one row per planned partition, each holding the whole event with the
        # run's whole partition subset: quadratic (2,000 partitions: 15 s and ~120 MB per check
        # and run). Each row here holds the event narrowed to its own partition.
        planned = event.dagster_event.event_specific_data
        subset = planned.partitions_subset
        partitions = subset.get_partition_keys() if subset is not None else [None]
        serialized = narrowed_events(event, partitions)
        rows = [
            dict(
                asset_key=planned.asset_key.to_string(),
                check_name=planned.check_name,
                partition=partition,
                run_id=event.run_id,
                execution_status=AssetCheckExecutionRecordStatus.PLANNED.value,
                evaluation_event=serialized(partition),
                evaluation_event_timestamp=self._event_insert_timestamp(event),
                evaluation_event_storage_id=event_id,
            )
            for partition in partitions
        ]
        with self.index_connection() as connection:
            # One statement executed for each row: a statement of 2,000 rows' values took SQLAlchemy
            # about a second to compile.
            connection.execute(AssetCheckExecutionsTable.insert(), rows)

    def has_table(self, table_name: str) -> bool:
        found = self._tables.get(table_name)
        if found is None:
            found = self._tables[table_name] = super().has_table(table_name)
        return found

    def upgrade(self) -> None:
        self._tables.clear()
        self._asset_key_index_cols = None
        super().upgrade()
        self._tables.clear()
        self._asset_key_index_cols = None

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


def _inserted_ids(connection: Connection, rows: list[dict]) -> list[int]:
    """Insert ``rows`` into the event log table (one statement, executed for each); their ids,
    in order. Rows inserted one after another in a transaction, which holds the database's
    write lock, get consecutive ids (SQLite numbers a new row after the largest), the last of
    which SQLite reports. Counting them guards against the one exception, random ids once the
    largest id is taken."""
    connection.execute(SqlEventLogStorageTable.insert(), rows)
    last = connection.exec_driver_sql("SELECT last_insert_rowid()").scalar_one()
    first = last - len(rows) + 1
    table = SqlEventLogStorageTable
    counted = connection.execute(
        select(func.count()).select_from(table).where(table.c.id.between(first, last))
    ).scalar_one()
    if counted != len(rows):
        raise RuntimeError(
            f"event ids {first}..{last}: expected {len(rows)} new rows, found {counted}"
        )
    return list(range(first, last + 1))
