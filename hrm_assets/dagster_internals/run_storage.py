"""Dagster's SQLite run storage with its connection kept open."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from dagster._core.storage.event_log.sqlite.sqlite_event_log import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.runs import SqliteRunStorage
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.engine import Connection
from sqlalchemy.pool import QueuePool

from hrm_assets.dagster_internals.sqlite_connections import commit_without_fsync


class PooledSqliteRunStorage(SqliteRunStorage):
    """Dagster's SQLite run storage, with its connection pooled (it opened, checkpointed and
    closed ``runs.db`` for every statement: ~0.2 s of each run) and the tables' columns looked
    up once, not at every run event."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None):
        self._pooled = create_engine(
            conn_string,
            poolclass=QueuePool,
            pool_size=1,
            max_overflow=4,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        )
        sqlalchemy_event.listen(self._pooled, "connect", commit_without_fsync)
        self._columns: dict[str, bool] = {}
        super().__init__(conn_string, inst_data)

    @contextlib.contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._pooled.connect() as connection, connection.begin():
            yield connection

    def _cached(self, name: str, look_up) -> bool:
        found = self._columns.get(name)
        if found is None:
            found = self._columns[name] = look_up()
        return found

    def has_run_stats_index_cols(self) -> bool:
        return self._cached("run_stats", super().has_run_stats_index_cols)

    def has_bulk_actions_selector_cols(self) -> bool:
        return self._cached("bulk_selector", super().has_bulk_actions_selector_cols)

    def has_backfill_id_column(self) -> bool:
        return self._cached("backfill_id", super().has_backfill_id_column)

    def has_bulk_action_job_name_column(self) -> bool:
        return self._cached("bulk_job_name", super().has_bulk_action_job_name_column)

    def has_backfill_tags_table(self) -> bool:
        return self._cached("backfill_tags", super().has_backfill_tags_table)

    def upgrade(self) -> None:
        self._columns.clear()
        super().upgrade()
        self._columns.clear()

    def migrate(self, print_fn=None, force_rebuild_all: bool = False) -> None:
        self._columns.clear()
        super().migrate(print_fn, force_rebuild_all)
        self._columns.clear()

    def dispose(self) -> None:
        self._pooled.dispose()
        super().dispose()
