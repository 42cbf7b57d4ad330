"""A tokenized run's outcomes turned into per-partition records (``records.py``) and check
evaluations: a changed file gets a materialization with its own data version and its checks;
an unchanged one keeps its record, and only a failing check of it is news."""

from collections.abc import Iterator, Sequence

import dagster as dg

from hrm_assets.defs.tokenized.checks import (
    reused_remote_check_results,
    tokenized_check_results_many,
)
from hrm_assets.defs.tokenized.records import (
    latest_materialization_targets,
    materialization,
    partition_evaluation,
    recorded_data_versions,
    version_tags,
)
from hrm_assets.tokenization.build import TokenizedBuild
from hrm_assets.tokenization.outcomes import TokenizeOutcome

# Check evaluations wait for a batch of partitions, whose targets (the latest materializations)
# are then looked up at once; outcomes are checked in batches of that size too.
EVALUATIONS_PER_LOOKUP = 256

Event = dg.AssetMaterialization | dg.AssetCheckEvaluation


class PartitionRecorder:
    """Records the outcomes of one run of ``asset_key``'s ``partitions``."""

    def __init__(
        self,
        instance: dg.DagsterInstance,
        asset_key: dg.AssetKey,
        partitions: Sequence[str],
        deps: Sequence[dg.AssetKey],
        code_version: str,
    ):
        self.instance, self.asset_key = instance, asset_key
        self.recorded = recorded_data_versions(instance, asset_key, partitions)
        self.tags = version_tags(instance, deps, code_version)
        self.unchanged: list[TokenizeOutcome] = []  # outcomes whose record already states them
        self.records = 0
        self.failed_checks = 0
        self._evaluations: list[tuple[str, list[dg.AssetCheckResult]]] = []

    def record(self, build: TokenizedBuild, batch: list[TokenizeOutcome]) -> Iterator[Event]:
        """Both checks of every outcome of ``batch``, its folder's arrays read once for both
        and the local folders checked at once; then its records."""
        local = [result.output_dir for result in batch if result.output_dir is not None]
        checked = iter(tokenized_check_results_many(build.tokenized_root, local, build.vocab_size))
        changed = [r for r in batch if self.recorded.get(r.safe_name) != r.data_version]
        sidecars = build.sidecar_folders(changed)
        for result in batch:
            if result.output_dir is None:  # a remote folder reused from its manifest
                checks = reused_remote_check_results(build.folder_of(result))
            else:
                checks = next(checked)
            key = result.safe_name
            if self.recorded.get(key) == result.data_version:
                self.unchanged.append(result)
                # Its latest record holds passing checks; only a failure is news (recorded
                # with both checks' figures, against that record).
                to_record = checks if not all(check.passed for check in checks) else []
            else:
                self.records += 1
                folder, sidecar_folder = build.published_folder(result), sidecars[result.safe_name]
                yield materialization(self.asset_key, result, self.tags, folder, sidecar_folder)
                to_record = checks
            self.failed_checks += sum(not check.passed for check in checks)
            if to_record:
                self._evaluations.append((key, to_record))
            if len(self._evaluations) >= EVALUATIONS_PER_LOOKUP:
                yield from self.flush()

    def flush(self) -> Iterator[dg.AssetCheckEvaluation]:
        """The check evaluations waiting for their targets."""
        keys = [key for key, _ in self._evaluations]
        targets = latest_materialization_targets(self.instance, self.asset_key, keys)
        for key, results in self._evaluations:
            for check in results:
                yield partition_evaluation(check, self.asset_key, key, targets.get(key))
        self._evaluations.clear()

    def record_unchanged(self, build: TokenizedBuild) -> Iterator[dg.AssetMaterialization]:
        """A record of every unchanged outcome (a failed run marks every partition it did not
        record as failed: so only the failing files show as failed)."""
        for start in range(0, len(self.unchanged), EVALUATIONS_PER_LOOKUP):
            yield from self._materializations(
                build, self.unchanged[start : start + EVALUATIONS_PER_LOOKUP]
            )

    def freshness_record(self, build: TokenizedBuild) -> Iterator[dg.AssetMaterialization]:
        """Freshness counts records: after a no-op rebuild, one unchanged (and re-verified)
        file stands for the whole batch, so a stable source does not look stale."""
        if not self.records and not self.failed_checks and self.unchanged:
            yield from self._materializations(build, self.unchanged[:1])

    def _materializations(
        self, build: TokenizedBuild, results: list[TokenizeOutcome]
    ) -> Iterator[dg.AssetMaterialization]:
        sidecars = build.sidecar_folders(results)
        for result in results:
            folder, sidecar_folder = build.published_folder(result), sidecars[result.safe_name]
            yield materialization(self.asset_key, result, self.tags, folder, sidecar_folder)
