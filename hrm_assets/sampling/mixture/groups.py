"""Which mixture group each task is in: the prefix of the rule that applies to it
(``group_by: rule``), or the registered source whose cleaned file it was tokenized from
(``group_by: source``). ``None``: a task in no group the weights name (the others)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hrm_assets.sampling.mixture.config import MixtureConfig, MixtureConfigError, effective_phases
from hrm_assets.sampling.prefix_config import PrefixRule, rule_for


def weighted_groups(mixture: MixtureConfig) -> set[str]:
    """Every group some phase gives a weight (0 included)."""
    return {group for phase in effective_phases(mixture) for group in phase.weights}


def task_groups(
    names: Sequence[str], rules: list[PrefixRule], mixture: MixtureConfig, path: Path
) -> list[str | None]:
    """Each task's group, in task order. With ``group_by: source`` a weight naming no
    registered source is a :class:`MixtureConfigError` naming the key (``path``: the file)."""
    named = weighted_groups(mixture)
    if mixture.group_by == "rule":
        found = []
        for name in names:
            rule = rule_for(name, rules)
            prefix = rule.prefix if isinstance(rule, PrefixRule) else None
            found.append(prefix if prefix in named else None)
        return found
    from hrm_assets.cleaning.sources import SOURCES

    unknown = sorted(named - set(SOURCES))
    if unknown:
        raise MixtureConfigError(
            f"{path}: mixture.weights.{unknown[0]}: no registered source has this name "
            f"(group_by: source; sources: {', '.join(SOURCES)})"
        )
    # The registered source that writes each task's cleaned file, as the data card finds it.
    from hrm_assets.sampling.datacard.task_sources import sources_of_tasks

    sources = sources_of_tasks(names, SOURCES)
    return [source if (source := sources[name]) in named else None for name in names]
