"""What a training node's epochs are made from, as one fingerprint.

The fingerprint covers the data version of every registered tokenized partition (content
hashes, so a no-op re-tokenization changes nothing), the bytes of ``prefix_config.yaml`` and the
node's configuration. The sampled asset records it on each materialization; the sensor requests
a run for a node whose recorded fingerprint differs from the current one.
"""

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.hashing import value_sha256
from hrm_assets.defs.common.keys import TOKENIZED_PREFIX, tokenized_key
from hrm_assets.defs.tokenized.jobs import TOKENIZE_JOBS
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.sampling.training_nodes import TrainingNode

# Dagster stores a materialization's data version under this tag (dagster/_core/definitions/
# data_version.py, DATA_VERSION_TAG); the event log indexes it per partition.
DATA_VERSION_TAG = "dagster/data_version"
FINGERPRINT_METADATA = "input_fingerprint"
# Written by the sampled asset: the settings of a run by hand that were not the node's.
RUN_OVERRIDES_METADATA = "run_overrides"
FINGERPRINT_TAG = "hrm/input-fingerprint"


@dataclass(frozen=True)
class TokenizedState:
    """Latest data version per registered tokenized partition, and the ones never built."""

    versions: dict[str, dict[str, str]] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return sum(len(versions) for versions in self.versions.values())

    @property
    def missing_count(self) -> int:
        return sum(len(keys) for keys in self.missing.values())


def tokenized_state(instance: dg.DagsterInstance) -> TokenizedState:
    """One event-log query per source; partitions deleted since are ignored."""
    versions: dict[str, dict[str, str]] = {}
    missing: dict[str, list[str]] = {}
    for name in SOURCES:
        registered = instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[name].name)
        if not registered:
            continue
        latest = instance.event_log_storage.get_latest_tags_by_partition(
            tokenized_key(name), dg.DagsterEventType.ASSET_MATERIALIZATION, [DATA_VERSION_TAG]
        )
        found = {
            key: latest[key][DATA_VERSION_TAG]
            for key in registered
            if DATA_VERSION_TAG in latest.get(key, {})
        }
        if found:
            versions[name] = found
        absent = sorted(set(registered) - set(found))
        if absent:
            missing[name] = absent
    return TokenizedState(versions=versions, missing=missing)


def input_fingerprint(state: TokenizedState, prefix_config: bytes, node: TrainingNode) -> str:
    """Hex SHA-256 of the tokenized data versions, the sampling rules' bytes and the node."""
    return value_sha256(
        {
            "tokenized": state.versions,
            "prefix_config_sha256": hashlib.sha256(prefix_config).hexdigest(),
            "node": node.fingerprint_fields(),
        }
    )


def current_fingerprint(
    instance: dg.DagsterInstance, prefix_config_path: str | Path, node: TrainingNode
) -> str:
    """The node's fingerprint now; ``prefix_config_path`` is the project's rules file, which
    the node's own ``prefix_config_path`` replaces when it sets one."""
    rules = node.prefix_config(Path(prefix_config_path))
    return input_fingerprint(tokenized_state(instance), rules.read_bytes(), node)


def recorded_fingerprint(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """The fingerprint on the asset's latest materialization, None if there is none."""
    return recorded_inputs(instance, key)[0]


def recorded_inputs(
    instance: dg.DagsterInstance, key: dg.AssetKey
) -> tuple[str | None, dict[str, object]]:
    """(fingerprint, settings of a one-off run) on the asset's latest materialization: the
    settings a run by hand gave that were not the node's (empty when the epochs are the
    node's own, or there is no materialization)."""
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return None, {}
    metadata = event.asset_materialization.metadata
    value = metadata.get(FINGERPRINT_METADATA)
    overrides = metadata.get(RUN_OVERRIDES_METADATA)
    found = overrides.value if overrides is not None else None
    return (
        str(value.value) if value is not None else None,
        dict(found) if isinstance(found, dict) else {},
    )


def tokenization_runs_in_progress(instance: dg.DagsterInstance) -> list[str]:
    """Ids of queued or running runs that write tokenized partitions."""
    runs = instance.get_runs(
        filters=dg.RunsFilter(
            statuses=[
                dg.DagsterRunStatus.QUEUED,
                dg.DagsterRunStatus.NOT_STARTED,
                dg.DagsterRunStatus.STARTING,
                dg.DagsterRunStatus.STARTED,
            ]
        )
    )
    tokenize_jobs = {job.name for job in TOKENIZE_JOBS.values()}
    busy = []
    for run in runs:
        selection = run.asset_selection or frozenset()
        if run.job_name in tokenize_jobs or any(
            key.path[0] == TOKENIZED_PREFIX for key in selection
        ):
            busy.append(run.run_id)
    return busy
