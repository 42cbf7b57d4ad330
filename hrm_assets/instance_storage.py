"""The import path ``dagster.yaml`` files written before issue 32 name for the local instance's
storage (``module: hrm_assets.instance_storage``). Kept so that those instances keep loading;
new ones name ``hrm_assets.dagster_internals.instance``, where the storage lives."""

from hrm_assets.dagster_internals.instance import PooledSqliteStorage

__all__ = ["PooledSqliteStorage"]
