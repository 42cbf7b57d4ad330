"""Dagster's own SQLite storage, behind the name ``dagster.yaml`` gives the project's."""

from __future__ import annotations

from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClassData


class DagstersOwnSqliteStorage(DagsterSqliteStorage):
    """Loaded from the project's storage configuration, builds what ``storage: sqlite`` does."""

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value
    ) -> DagsterSqliteStorage:
        return DagsterSqliteStorage.from_config_value(inst_data, config_value)
