"""The storage ``dagster.yaml`` names for the local instance:

    storage:
      custom:
        module: hrm_assets.dagster_internals.instance
        class: PooledSqliteStorage
        config:
          base_dir: {env: DAGSTER_HOME}

On the Dagster release this package was written for, Dagster's SQLite storage with pooled
connections, grouped commits and batched records (``sqlite_storage``); on any other, the same
configuration gives Dagster's own SQLite storage (the package warned once when imported).
"""

from hrm_assets.dagster_internals import TESTED

if TESTED:
    from hrm_assets.dagster_internals.sqlite_storage import PooledSqliteStorage
else:
    from hrm_assets.dagster_internals.fallback import (
        DagstersOwnSqliteStorage as PooledSqliteStorage,
    )

__all__ = ["PooledSqliteStorage"]
