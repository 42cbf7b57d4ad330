"""Declarative automation and freshness shared by the graph.

Assets rebuild when an upstream's *data version* changes, not merely when it is
rematerialized: a rebuild that reproduces identical content triggers nothing downstream.
"""

import os
from datetime import timedelta

import dagster as dg

AC = dg.AutomationCondition


def on_upstream_data_change() -> dg.AutomationCondition:
    """Like ``eager()``, but keyed on upstream data versions instead of any new event.

    Written out rather than built from ``eager()``'s parts: every node of the tree is evaluated,
    stored in the sensor's cursor and serialized into its evaluations on every tick, for each of
    the 50 assets that use it. So it leaves out what is always true in this graph (the time
    window: no asset is time-partitioned; "will be requested" on a missing dependency: a raw
    source is observed, never requested, and a cleaned asset or the tokenizer never runs in the
    same run as a tokenized partition) and asks each dependency one question (missing or in
    progress) instead of two.
    """
    upstream_changed = AC.any_deps_match(AC.data_version_changed()).with_label(
        "any_deps_data_version_changed"
    )
    deps_not_ready = AC.any_deps_match(AC.missing() | AC.in_progress()).with_label(
        "any_deps_missing_or_in_progress"
    )
    # Handled: requested or updated since. Not also Dagster's first evaluation, as
    # since_last_handled() has it: a partition already missing then (the files of a corpus
    # adopted before the automation sensor's first tick) would never be requested.
    handled = (AC.newly_requested() | AC.newly_updated()).with_label("requested_or_updated")
    # The trigger comes first: the checks after it only look at what it selected, which is
    # nothing on most ticks (checking them first costs a third more instance queries).
    return (
        (AC.newly_missing() | upstream_changed)
        .since(handled)
        .with_label("newly_missing_or_upstream_data_changed")
        & ~deps_not_ready
        & ~AC.in_progress()
    ).with_label("on_upstream_data_change")


def on_missing_only() -> dg.AutomationCondition:
    """For the tokenizer: trained once when missing; retraining re-tokenizes everything, so
    it is a deliberate, manual step (the UI still marks it stale when cleaned data changes)."""
    return AC.on_missing()


def _hours(name: str, default: float) -> timedelta:
    value = os.environ.get(name)
    try:
        hours = float(value) if value else default
    except ValueError:
        raise ValueError(f"{name}={value!r}: expected a number of hours") from None
    if hours <= 0:
        raise ValueError(f"{name}={value!r}: must be positive")
    return timedelta(hours=hours)


def freshness_policy(stage: str) -> dg.FreshnessPolicy:
    """``HRM_FRESHNESS_<STAGE>_HOURS`` (fail window; warn at half of it). Defaults: cleaned and
    tokenized 8 days (a nightly rebuild can miss a week), sampled 2 days."""
    defaults = {"cleaned": 192.0, "tokenized": 192.0, "sampled": 48.0}
    fail = _hours(f"HRM_FRESHNESS_{stage.upper()}_HOURS", defaults[stage])
    return dg.FreshnessPolicy.time_window(fail_window=fail, warn_window=fail / 2)


AUTOMATION_SENSOR = dg.AutomationConditionSensorDefinition(
    name="automation_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Evaluates every asset's automation condition (on by default).",
)
