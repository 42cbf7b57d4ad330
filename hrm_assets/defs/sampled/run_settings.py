"""A sampled run's settings: the run config's keys (``SamplingRunConfig``) over the training
node's, a one-off run's overrides, and a conflict with the node's own keys refused."""

import dagster as dg

from hrm_assets.sampling import defaults
from hrm_assets.sampling.training_nodes import SETTING_KEYS, TrainingNode, training_nodes_path


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


def settings_text(settings: dict) -> str:
    """``key=value, ...``: settings as a log line says them."""
    return ", ".join(f"{key}={value}" for key, value in settings.items())
