"""What the project's event log storage offers beyond Dagster's (the declared interface).

Callers test ``isinstance(storage, BatchedRecordStorage)``; any other storage (PostgreSQL,
Dagster's own SQLite storage on an untested release) is used through Dagster's API alone.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg
    from dagster._core.definitions.asset_checks.asset_check_evaluation import (
        AssetCheckEvaluationTargetMaterializationData,
    )


class BatchedRecordStorage(abc.ABC):
    """An event log storage that can group a step's commits and read check targets in bulk."""

    @abc.abstractmethod
    def grouped_commits(self) -> contextlib.AbstractContextManager[None]:
        """Within: writes are committed in groups and a run's records written in batches;
        reads see them at once, other processes at the group's next commit."""

    @abc.abstractmethod
    def latest_materialization_targets(
        self, asset_key: dg.AssetKey, partitions: Sequence[str]
    ) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
        """What a check evaluation of each of ``partitions`` refers to: its latest
        materialization (partitions never materialized are left out)."""
