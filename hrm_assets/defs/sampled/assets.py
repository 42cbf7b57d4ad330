"""Sampled epochs, one asset per training node (``sampled/<node>``).

Each node's step carries that node's Celery queue, so with ``HRM_EXECUTOR=celery`` the worker
on the node writes the epochs into its own output path (``/dev/shm/sampled`` on HRM-Text's
nodes). The materialization records which worker wrote them and the input fingerprint the
sensor compares against. The build (skip if unchanged, the sampler run, its record) is the
sampling stage's (``hrm_assets.sampling.build``).
"""

from pathlib import Path

import dagster as dg

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.data_root import DataRoot
from hrm_assets.defs.common.automation import freshness_policy
from hrm_assets.defs.common.executor import CELERY_QUEUE_TAG, WORKER_NODE_ENV, current_step_worker
from hrm_assets.defs.common.keys import SAMPLED_PREFIX, sampled_key, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.sampled.checks import short_responses_result, short_responses_spec
from hrm_assets.defs.sampled.datacard_metadata import data_card_metadata
from hrm_assets.defs.sampled.inputs import (
    FINGERPRINT_METADATA,
    RUN_OVERRIDES_METADATA,
    current_fingerprint,
)
from hrm_assets.defs.sampled.metadata import analytics_metadata, warnings_markdown
from hrm_assets.defs.sampled.run_settings import (
    SamplingRunConfig,
    given_run_config,
    node_run_settings,
    settings_text,
)
from hrm_assets.sampling.build import SamplingInputs, build_sampled
from hrm_assets.sampling.training_nodes import (
    TrainingNode,
    load_training_nodes,
    nodes_sharing_output,
)

NODE_TAG = "hrm/training-node"


def build_sampled_asset(node: TrainingNode) -> dg.AssetsDefinition:
    @dg.asset(
        key=sampled_key(node.name),
        group_name=SAMPLED_PREFIX,
        deps=[tokenized_key(name) for name in SOURCES],
        kinds={"python", "numpy"},
        op_tags={CELERY_QUEUE_TAG: node.queue_name(), NODE_TAG: node.name},
        tags={NODE_TAG: node.name},
        description=(
            f"Stratified epochs for training node {node.name!r} "
            f"(data_io's sample_tokenized.py output, read directly by HRM-Text)."
        ),
        code_version="1",
        freshness_policy=freshness_policy("sampled"),
        check_specs=[short_responses_spec(node)],
    )
    def sampled(
        context: dg.AssetExecutionContext, config: SamplingRunConfig, data_paths: DataPaths
    ) -> dg.MaterializeResult:
        worker = current_step_worker()
        if worker.node and worker.node != node.name:
            raise dg.Failure(
                f"the epochs of training node {node.name!r} (queue {node.queue_name()!r}) reached "
                f"worker {worker.name or worker.hostname!r}, which serves node {worker.node!r} "
                f"({WORKER_NODE_ENV}); check the queues its worker serves (-q) against "
                f"training_nodes.yaml"
            )
        sharing = nodes_sharing_output(load_training_nodes(), node) if not worker.queue else []
        if sharing:
            raise dg.Failure(
                f"training nodes {node.name!r} and {', '.join(map(repr, sharing))} share "
                f"output_path {node.output_dir()} and this run is on this machine (not on "
                "Celery, where each node's worker has its own): their epochs would replace each "
                "other's; give each node its own output_path in training_nodes.yaml"
            )
        settings, overrides = node_run_settings(node, given_run_config(context, config))
        prefix_config_path = node.prefix_config(Path(data_paths.prefix_config_path))
        fingerprint = current_fingerprint(context.instance, prefix_config_path, node)
        output = node.output_dir(data_paths.root)
        if overrides:
            context.log.warning(
                f"a one-off run: {settings_text(overrides)} instead of training node "
                f"{node.name!r}'s settings; the sensor will not replace these epochs (pin the "
                "keys in training_nodes.yaml to make them the node's)"
            )
        build = build_sampled(
            SamplingInputs(
                tokenized=DataRoot(data_paths.tokenized_location),
                tokenizer=DataRoot(data_paths.tokenizer_location),
                node_tokenizer=Path(node.tokenizer_path) if node.tokenizer_path else None,
                output=output,
                prefix_config_path=prefix_config_path,
                settings=settings,
                fingerprint=fingerprint,
            ),
            log=context.log.info,
            warn=context.log.warning,
        )
        summary = build.summary
        warnings = summary.get("warnings", [])
        tokenizer_dir = summary.get("tokenizer_dir")
        return dg.MaterializeResult(
            data_version=dg.DataVersion(build.build_key),
            check_results=[short_responses_result(summary["figures"], settings["min_resp_length"])],
            metadata={
                **analytics_metadata(summary),
                # DATACARD.md, written by the sampler into the output
                # (hrm_assets.sampling.datacard).
                **data_card_metadata(output),
                "output_path": dg.MetadataValue.path(str(output)),
                # What transformers.AutoTokenizer.from_pretrained loads (None: none shipped).
                "tokenizer_dir": dg.MetadataValue.path(tokenizer_dir) if tokenizer_dir else None,
                "warning_count": len(warnings),
                "warnings": dg.MetadataValue.md(warnings_markdown(warnings)),
                **settings,
                "prefix_config_path": dg.MetadataValue.path(str(prefix_config_path)),
                # Settings of this run that are not the node's (a run by hand): the sensor
                # never replaces such epochs (sensors.py).
                RUN_OVERRIDES_METADATA: dg.MetadataValue.json(overrides),
                "resampled": build.resampled,
                "training_node": node.name,
                "node_queue": node.queue_name(),
                "worker_hostname": worker.hostname,
                "worker_name": worker.name,
                "worker_queue": worker.queue,
                "worker_node": worker.node,
                FINGERPRINT_METADATA: fingerprint,
            },
        )

    return sampled


SAMPLED_ASSETS = [build_sampled_asset(node) for node in load_training_nodes()]
