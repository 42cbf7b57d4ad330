"""Requests ``sample_epochs`` runs, one per training node, when the tokenized data or
``prefix_config.yaml`` changes.

A node is due when the fingerprint of its inputs (``inputs.py``) differs from the one recorded
on its latest materialization, so a node sampled by hand, or by an earlier run of this sensor,
is not requested again. The run key is the node and the fingerprint: the daemon launches each
(node, inputs) pair once, however many ticks see it. While tokenization runs are queued or in
progress, or a registered partition was never tokenized, the sensor waits rather than sample a
half-updated tree.

A run requested here has no run config: the node's epochs are made with its own settings
(``training_nodes.yaml``). A node whose latest epochs came from a run by hand with other
settings is not resampled (that would replace them); the tick says so.
"""

from collections.abc import Sequence
from pathlib import Path

import dagster as dg

from hrm_assets.defs.common.keys import sampled_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.sampled.assets import NODE_TAG
from hrm_assets.defs.sampled.inputs import (
    FINGERPRINT_TAG,
    input_fingerprint,
    recorded_inputs,
    tokenization_runs_in_progress,
    tokenized_state,
)
from hrm_assets.defs.sampled.jobs import sample_job
from hrm_assets.sampling.training_nodes import (
    TrainingNode,
    load_training_nodes,
    training_nodes_path,
)

SENSOR_NAME = "sampled_epochs_sensor"


def run_key(node: TrainingNode, fingerprint: str) -> str:
    return f"{node.name}:{fingerprint}"


def one_off_settings(node: TrainingNode, overrides: dict) -> str:
    """``epochs=4 (node: 10)`` for each setting a run by hand gave that is still not the
    node's; empty when there is none (or the node has since been given those values)."""
    settings = node.sampling_settings()
    return ", ".join(
        f"{key}={value} (node: {settings.get(key)})"
        for key, value in overrides.items()
        if settings.get(key) != value
    )


def build_sampled_epochs_sensor(
    nodes: Sequence[TrainingNode], job=sample_job
) -> dg.SensorDefinition:
    """The sensor for ``nodes``; each request selects one node's ``sampled/<node>`` asset."""
    nodes = list(nodes)

    @dg.sensor(
        name=SENSOR_NAME,
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="One sample_epochs run per training node whose inputs (tokenized data "
        "versions, prefix_config.yaml, node config) changed since its last materialization.",
    )
    def sampled_epochs_sensor(
        context: dg.SensorEvaluationContext, data_paths: DataPaths
    ) -> dg.SensorResult | dg.SkipReason:
        busy = tokenization_runs_in_progress(context.instance)
        if busy:
            return dg.SkipReason(f"waiting for {len(busy)} tokenization run(s): {busy[:3]}")
        state = tokenized_state(context.instance)
        if state.missing_count:
            examples = [f"{src}/{keys[0]}" for src, keys in sorted(state.missing.items())][:3]
            return dg.SkipReason(
                f"waiting for {state.missing_count} registered tokenized partition(s) never "
                f"materialized, e.g. {examples}"
            )
        if not state.partitions:
            return dg.SkipReason("no tokenized partition materialized yet")

        requests, kept = [], []
        for node in nodes:
            rules = node.prefix_config(Path(data_paths.prefix_config_path))
            fingerprint = input_fingerprint(state, rules.read_bytes(), node)
            recorded, overrides = recorded_inputs(context.instance, sampled_key(node.name))
            if recorded == fingerprint:
                continue
            foreign = one_off_settings(node, overrides)
            if foreign:
                # A run by hand wrote these epochs with settings that are not the node's:
                # resampling with the node's would replace them (the user decides).
                kept.append(f"{node.name} ({foreign})")
                continue
            requests.append(
                dg.RunRequest(
                    run_key=run_key(node, fingerprint),
                    asset_selection=[sampled_key(node.name)],
                    tags={NODE_TAG: node.name, FINGERPRINT_TAG: fingerprint},
                )
            )
        if kept:
            context.log.warning(
                f"not resampled, their epochs come from a run by hand with other settings than "
                f"{training_nodes_path()}'s: {'; '.join(kept)}; set those keys for the node "
                "there, or materialize it by hand again"
            )
        if not requests:
            if kept:
                return dg.SkipReason(
                    f"{len(kept)} node(s) hold epochs of a run by hand with settings that are "
                    f"not the node's, kept: {'; '.join(kept)}"
                )
            return dg.SkipReason(
                f"all {len(nodes)} node(s) hold epochs of the current {state.partitions} "
                f"tokenized partition(s) and prefix config"
            )
        context.log.info(
            f"{state.partitions} tokenized partition(s); requesting "
            f"{', '.join(request.tags[NODE_TAG] for request in requests)}"
        )
        return dg.SensorResult(run_requests=requests)

    return sampled_epochs_sensor


sampled_epochs_sensor = build_sampled_epochs_sensor(load_training_nodes())
