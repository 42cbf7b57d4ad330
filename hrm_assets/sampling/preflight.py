"""What is said or refused before any epoch is drawn: a bad sources registry, rules that match
several or no tasks, epochs that cannot fit the disk, epochs that would be empty, rows
truncation left short."""

from __future__ import annotations

from pathlib import Path

from hrm_assets.sampling.config import SamplingConfig, SamplingError
from hrm_assets.sampling.epoch_budget import EpochBudgetError, TaskDemand, check_epoch_budget
from hrm_assets.sampling.prefix_config import PrefixRule
from hrm_assets.sampling.task_reports import CoverageStats, TaskReport


def ambiguity_warnings(names: list[str], rules: list[PrefixRule]) -> list[str]:
    """data_io warns when a task matches several prefixes; grouped here, one line per group."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name in names:
        matching = tuple(rule.prefix for rule in rules if name.startswith(rule.prefix))
        if len(matching) > 1:
            groups.setdefault(matching, []).append(name)
    messages = []
    for matching, tasks in groups.items():
        shown = ", ".join(tasks[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
        messages.append(
            f"{len(tasks)} task(s) match several prefixes {list(matching)}; the first rule "
            f"({matching[0]!r}) applies: {shown}"
        )
    return messages


def unmatched_rule_warnings(
    names: list[str], rules: list[PrefixRule], config: SamplingConfig
) -> list[str]:
    """One line naming the rules whose prefix no task folder starts with: a typo there leaves
    the tasks it meant under the defaults, silently in data_io. A warning, not an error: one
    rules file (the project's) serves tokenized roots that hold only some of its sources."""
    unmatched = [
        f"rule {index} (prefix {rule.prefix!r})"
        for index, rule in enumerate(rules)
        if not any(name.startswith(rule.prefix) for name in names)
    ]
    if not unmatched:
        return []
    return [
        f"{config.prefix_config_path}: {', '.join(unmatched)} "
        f"{'matches' if len(unmatched) == 1 else 'match'} no task folder of "
        f"{config.tokenized_path} (a typo?): applied to nothing"
    ]


def check_budget(
    reports: list[TaskReport],
    rules: list[PrefixRule],
    config: SamplingConfig,
    output: Path,
    token_bytes: int,
    free_bytes: int,
) -> None:
    """Refuse epochs that cannot fit (:mod:`hrm_assets.sampling.epoch_budget`) before drawing
    them, in ``free_bytes`` (measured before the copy of ``tokens.npy`` began, which the
    budget counts: measured during the copy, the same disk would be refused or accepted by
    how far the copy had got)."""
    try:
        check_epoch_budget(
            [TaskDemand(report.name, report.rule, report.rows_per_epoch) for report in reports],
            rules,
            epochs=config.epochs,
            token_bytes=token_bytes,
            output_path=output,
            rules_path=config.prefix_config_path,
            free_bytes=free_bytes,
        )
    except EpochBudgetError as exc:
        raise SamplingError(str(exc)) from None


def empty_epochs_message(reports: list[TaskReport], config: SamplingConfig) -> str:
    """Why every epoch would be empty, naming the setting that emptied them: an empty output
    is never written over a good one (data_io writes it, and exits 0)."""
    stats = CoverageStats.total(report.stats for report in reports)
    causes = []
    if stats.rows_dropped_long:
        causes.append(
            f"{stats.rows_dropped_long:,} longer than context_size={config.context_size} "
            f"(long_context: drop)"
        )
    if stats.rows_dropped_short + stats.rows_dropped_short_after_truncate:
        causes.append(
            f"{stats.rows_dropped_short + stats.rows_dropped_short_after_truncate:,} with "
            f"fewer than min_resp_length={config.min_resp_length} response tokens"
        )
    excluded = [
        report.name for report in reports if report.stats.rows and not report.rows_per_epoch
    ]
    if excluded:
        causes.append(f"tasks given no rows by {config.prefix_config_path} ({excluded[0]}, ...)")
    why = "; ".join(causes) if causes else "the tokenized folders hold no rows"
    return (
        f"every epoch would be empty: of {stats.source_rows:,} rows none is left to sample "
        f"({why}); nothing was written, any previous output is kept"
    )


def short_after_truncate_warning(reports: list[TaskReport], config: SamplingConfig) -> str | None:
    """The warning for rows that truncation left shorter than ``min_resp_length`` and that are
    kept (``None`` if there are none).

    HRM-Text's loader gives a row of response length ``n`` a causal segment of ``n - 1``
    tokens; an empty one is what its own data preparation drops (``scripts/prepare_sft_data.py``
    skips empty responses), since a packed batch of only such segments crashes the backward
    pass of its FlashAttention 3 prefix-LM kernel.
    """
    if config.drop_short_after_truncate:
        return None
    tasks = [report for report in reports if report.stats.rows_short_after_truncate]
    if not tasks:
        return None
    rows = sum(report.stats.rows_short_after_truncate for report in tasks)
    shown = ", ".join(
        f"{report.name} ({report.stats.rows_short_after_truncate})" for report in tasks[:3]
    ) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
    return (
        f"{rows} row(s) were truncated to a response shorter than min_resp_length="
        f"{config.min_resp_length} and are kept, as data_io keeps them: {shown}. A one-token "
        f"response leaves HRM-Text's loader an empty segment, which its own data preparation "
        f"drops because a batch of only such segments crashes its attention backward pass; "
        f"drop_short_after_truncate=true excludes these rows"
    )


def check_source_registry() -> None:
    """Load the sources registry (built-in and ``sources.yaml``'s) the data card names each
    task's source from, before anything is read: a bad ``sources.yaml`` is one
    :class:`SamplingError` naming the file, entry and key (it is loaded when first imported,
    which is why the sampler imports the data card's writer only when it writes one)."""
    try:
        import hrm_assets.cleaning.sources  # noqa: F401
    except ValueError as exc:  # DeclaredSourceError, raised while the package loads
        raise SamplingError(str(exc)) from None
