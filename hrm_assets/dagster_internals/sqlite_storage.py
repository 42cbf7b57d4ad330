"""``storage: sqlite`` with the pooled event log and run storage (Dagster 1.13 only)."""

from __future__ import annotations

import os

from dagster._core.storage.schedules import SqliteScheduleStorage
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from dagster._utils import mkdir_p

from hrm_assets.dagster_internals.event_log import PooledSqliteEventLogStorage
from hrm_assets.dagster_internals.run_storage import PooledSqliteRunStorage


class PooledSqliteStorage(DagsterSqliteStorage):
    """``storage: sqlite`` with :class:`PooledSqliteEventLogStorage` as its event log and
    :class:`PooledSqliteRunStorage` as its run storage."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        # DagsterSqliteStorage.__init__ would also open stock storages; build ours instead.
        self.base_dir = base_dir
        self._run_storage = PooledSqliteRunStorage.from_local(_runs_directory(base_dir))
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
