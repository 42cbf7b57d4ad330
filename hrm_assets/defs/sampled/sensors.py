"""Requests ``sample_epochs`` runs, one per training node, when the tokenized data or
``prefix_config.yaml`` changes.

A node is due when the fingerprint of its inputs (``inputs.py``) differs from the one recorded
on its latest materialization, so a node sampled by hand, or by an earlier run of this sensor,
is not requested again. The run key is the node and the fingerprint: the daemon launches each
(node, inputs) pair once, however many ticks see it. While tokenization runs are queued or in
progress, or a registered partition was never tokenized, the sensor waits rather than sample a
half-updated tree.
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
    recorded_fingerprint,
    tokenization_runs_in_progress,
    tokenized_state,
)
from hrm_assets.defs.sampled.jobs import sample_job
from hrm_assets.sampling.training_nodes import TrainingNode, load_training_nodes

SENSOR_NAME = "sampled_epochs_sensor"


def run_key(node: TrainingNode, fingerprint: str) -> str:
    return f"{node.name}:{fingerprint}"


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

        prefix_config = Path(data_paths.prefix_config_path).read_bytes()
        requests = []
        for node in nodes:
            fingerprint = input_fingerprint(state, prefix_config, node)
            if recorded_fingerprint(context.instance, sampled_key(node.name)) == fingerprint:
                continue
            requests.append(
                dg.RunRequest(
                    run_key=run_key(node, fingerprint),
                    asset_selection=[sampled_key(node.name)],
                    tags={NODE_TAG: node.name, FINGERPRINT_TAG: fingerprint},
                )
            )
        if not requests:
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
