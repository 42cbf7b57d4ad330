"""The one corner of the project that uses Dagster's private modules (``dagster._...``).

What is here, and why it is not public API: the local instance's SQLite storage with pooled
connections, grouped commits and batched records (``sqlite_storage``, ``event_log``,
``run_storage``, ``planned_checks``; docs/DAGSTER.md), the per-partition records of a batched
tokenization run (``partition_records``: Dagster's own tags and events), and the executor that
runs a one-step run in the run's process (``executor``). Everything else in the project uses
``dagster`` as its public API.

This code overrides private methods and writes the rows Dagster writes, so it is only trusted on
the Dagster release it was written and tested against (:data:`WRITTEN_FOR`, the pin of
pyproject.toml and constraints.txt; a test keeps them equal). On any other release, importing
this package warns once and :data:`TESTED` is False: the instance then gets Dagster's own SQLite
storage (``instance.PooledSqliteStorage``) and the runs Dagster's own multiprocess executor
(``executor.multiprocess_executor``). Only the tags and events of ``partition_records``, without
which a batched run cannot record a partition's own data version, are used on every release.
"""

import warnings

import dagster

WRITTEN_FOR = "1.13.27"
"""The Dagster release this package was written and tested against."""


class UntestedDagsterWarning(UserWarning):
    """Dagster is not the release this package was written for: its own behaviour is used."""


def is_written_for(version: str) -> bool:
    return version == WRITTEN_FOR


TESTED = is_written_for(dagster.__version__)
"""Whether the installed Dagster is :data:`WRITTEN_FOR` (checked once, at import)."""

if not TESTED:
    warnings.warn(
        f"hrm_assets.dagster_internals was written for Dagster {WRITTEN_FOR}, found "
        f"{dagster.__version__}: using Dagster's own SQLite storage and multiprocess executor "
        "(slower on thousands of partitions, docs/DAGSTER.md). Install the pinned release "
        "(pip install -c constraints.txt -e .) to use the project's.",
        UntestedDagsterWarning,
        stacklevel=2,
    )
