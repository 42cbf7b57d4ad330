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
from hrm_assets.defs.common.metadata import share_bars, table
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.sampled.checks import short_responses_result, short_responses_spec
from hrm_assets.defs.sampled.datacard_metadata import data_card_metadata
from hrm_assets.defs.sampled.inputs import (
    FINGERPRINT_METADATA,
    RUN_OVERRIDES_METADATA,
    current_fingerprint,
)
from hrm_assets.sampling import defaults
from hrm_assets.sampling.build import SamplingInputs, build_sampled
from hrm_assets.sampling.training_nodes import (
    SETTING_KEYS,
    TrainingNode,
    load_training_nodes,
    nodes_sharing_output,
    training_nodes_path,
)

NODE_TAG = "hrm/training-node"


class SamplingRunConfig(dg.Config):
    """The sampler's settings (``hrm_assets.sampling.defaults``); the paths come from the
    ``DataPaths`` resource and the training node.

    Bounds are left to ``SamplingConfig``, so a bad value fails the step with one line naming
    the key (``epochs: Input should be greater than or equal to 1``).
    """

    seed: int = defaults.SEED.field(bounded=False)
    epochs: int = defaults.EPOCHS.field(bounded=False)
    context_size: int = defaults.CONTEXT_SIZE.field(bounded=False)
    min_resp_length: int = defaults.MIN_RESP_LENGTH.field(bounded=False)
    drop_short_after_truncate: bool = defaults.DROP_SHORT_AFTER_TRUNCATE.field(bounded=False)
    decontaminate: bool = defaults.DECONTAMINATE.field(bounded=False)
    dedup: bool = defaults.DEDUP.field(bounded=False)


def given_run_config(context: dg.AssetExecutionContext, config: SamplingRunConfig) -> dict:
    """The sampler settings the run's config gives this step explicitly, as validated in
    ``config`` (the keys of the run config as launched, under this op's name; not the defaults
    Dagster fills in)."""
    ops = (context.run.run_config or {}).get("ops") or {}
    given = (ops.get(context.op_execution_context.op.name) or {}).get("config") or {}
    return {key: getattr(config, key) for key in SETTING_KEYS if key in given}


def node_run_settings(node: TrainingNode, given: dict) -> tuple[dict, dict]:
    """(every setting of this run, the ones that are not the node's).

    The node's settings are its ``training_nodes.yaml`` keys over the defaults. A run may set
    a key the node leaves unset (a one-off run by hand, reported as an override); a key the
    node sets is the node's and a run asking for another value fails, naming both."""
    conflicts = node.conflicts(given)
    if conflicts:
        wanted = ", ".join(f"{key}={value}" for key, (value, _) in conflicts.items())
        pinned = ", ".join(f"{key}: {value}" for key, (_, value) in conflicts.items())
        raise dg.Failure(
            f"this run asks for {wanted}, but training node {node.name!r} sets {pinned} in "
            f"{training_nodes_path()}: its folder only receives epochs of its own settings; "
            "change them there"
        )
    node_settings = node.sampling_settings()
    settings = {**node_settings, **given}
    overrides = {key: value for key, value in given.items() if value != node_settings[key]}
    return settings, overrides


def _settings_text(settings: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in settings.items())


def _warnings_markdown(warnings: list[str]) -> str:
    return "\n".join(f"- {warning}" for warning in warnings) if warnings else "(none)"


def _analytics_metadata(summary: dict) -> dict:
    """Figures, tables and the Markdown report of a sampling run (as kept in its record)."""
    figures, categories = dict(summary["figures"]), summary["categories"]
    figures["task_count"] = figures.pop("tasks")  # "tasks" is the per-task table below
    return {
        "dagster/row_count": int(figures["sampled_rows"]),
        **figures,
        "category_token_share": dg.MetadataValue.md(
            share_bars(
                {c["category"]: c["sampled_token_share"] for c in categories},
                title="Sampled tokens",
            )
        ),
        "categories": table(categories),
        "tasks": table(summary["tasks"]),
        # Target against achieved shares per phase and group, only with a mixture.
        **({"mixture": table(summary["mixture"])} if summary.get("mixture") else {}),
        "analytics": dg.MetadataValue.md(summary["analytics"]),
    }


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
                f"a one-off run: {_settings_text(overrides)} instead of training node "
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
                **_analytics_metadata(summary),
                # DATACARD.md, written by the sampler into the output
                # (hrm_assets.sampling.datacard).
                **data_card_metadata(output),
                "output_path": dg.MetadataValue.path(str(output)),
                # What transformers.AutoTokenizer.from_pretrained loads (None: none shipped).
                "tokenizer_dir": dg.MetadataValue.path(tokenizer_dir) if tokenizer_dir else None,
                "warning_count": len(warnings),
                "warnings": dg.MetadataValue.md(_warnings_markdown(warnings)),
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
