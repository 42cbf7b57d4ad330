"""Target against achieved shares of a mixture, per phase and group: records (Dagster table
metadata, the data card) and the Markdown section appended to the analytics report.

Figures are per epoch: targets are the allocation's (:mod:`hrm_assets.sampling.mixture.allocation`);
achieved rows are the rows drawn, achieved tokens the drawn rows' tokens averaged over the
phase's epochs. Tokens miss their target by the difference between the rows drawn and their
task's mean row, and by any shortfall; rows are within one of their exact quota per task.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from hrm_assets.sampling.mixture.allocation import MixturePlan
from hrm_assets.sampling.span_table import segment_sums


@dataclass(frozen=True)
class GroupShare:
    """One group in one phase, per epoch."""

    phase: int
    first_epoch: int
    last_epoch: int
    group: str
    weight: float
    tasks: int
    target_share: float  # of the phase's token budget, after the temperature
    achieved_share: float  # of the tokens the phase drew
    target_tokens: float
    achieved_tokens: float
    target_rows: float  # exact quota before rounding
    achieved_rows: int
    row_share: float  # of the rows the phase drew
    capacity_tokens: float  # what the group's rules let it give
    shortfall_tokens: float  # target the group cannot fill (0 when it can)


@dataclass(frozen=True)
class PhaseSummary:
    index: int
    first_epoch: int
    last_epoch: int
    tokens_per_epoch: int
    temperature: float
    achieved_tokens: float  # per epoch, all groups
    achieved_rows: int  # per epoch, all groups
    groups: list[GroupShare]


@dataclass(frozen=True)
class MixtureReport:
    """What the sampling result carries about its mixture (``SamplingResult.mixture``)."""

    group_by: str
    phases: list[PhaseSummary]
    warnings: list[str]

    def records(self) -> list[dict[str, int | float | str]]:
        """One flat record per phase and group, in phase then weight order."""
        return [asdict(group) for phase in self.phases for group in phase.groups]

    def phase_of_epoch(self, epoch: int) -> PhaseSummary:
        return next(p for p in self.phases if p.first_epoch <= epoch <= p.last_epoch)


def _ratio(value: float, total: float) -> float:
    return value / total if total else 0.0


def mixture_report(
    plan: MixturePlan,
    phase_hits: list[np.ndarray],
    lengths: np.ndarray,
    kept_bounds: np.ndarray,
) -> MixtureReport:
    """The report of ``plan`` once drawn: ``phase_hits`` are each phase's draw counts per kept
    row, ``lengths`` each kept row's tokens, ``kept_bounds`` the tasks' segments of rows."""
    phases = []
    for allocation, hits in zip(plan.phases, phase_hits, strict=True):
        epochs = len(allocation.epochs)
        task_tokens = segment_sums(lengths * hits, kept_bounds).tolist()
        drawn_tokens: dict[str, float] = {}
        for group, tokens in zip(plan.task_groups, task_tokens, strict=True):
            drawn_tokens[group] = drawn_tokens.get(group, 0) + tokens / epochs
        total_tokens = sum(drawn_tokens.values())
        total_rows = allocation.rows_per_epoch
        first, last = allocation.epochs.start, allocation.epochs.stop - 1
        groups = [
            GroupShare(
                phase=allocation.phase.index,
                first_epoch=first,
                last_epoch=last,
                group=group.group,
                weight=group.weight,
                tasks=group.tasks,
                target_share=group.target_share,
                achieved_share=_ratio(drawn_tokens.get(group.group, 0.0), total_tokens),
                target_tokens=group.target_tokens,
                achieved_tokens=drawn_tokens.get(group.group, 0.0),
                target_rows=group.quota_rows,
                achieved_rows=group.rows,
                row_share=_ratio(group.rows, total_rows),
                capacity_tokens=group.capacity_tokens,
                shortfall_tokens=group.shortfall_tokens,
            )
            for group in allocation.groups
        ]
        phases.append(
            PhaseSummary(
                index=allocation.phase.index,
                first_epoch=first,
                last_epoch=last,
                tokens_per_epoch=allocation.phase.tokens_per_epoch,
                temperature=allocation.phase.temperature,
                achieved_tokens=total_tokens,
                achieved_rows=total_rows,
                groups=groups,
            )
        )
    return MixtureReport(group_by=plan.group_by, phases=phases, warnings=list(plan.warnings))


_HEADER = (
    "| Group | Weight | Target Share | Achieved Share | Target Tokens | Achieved Tokens "
    "| Target Rows | Rows | Shortfall |"
)


def render_mixture_section(report: MixtureReport) -> str:
    """``### Mixture``: one table per phase, figures per epoch (ends with a blank line)."""
    lines = [
        "### Mixture",
        f"Groups by {report.group_by}; figures per epoch. Target share: the weights after the "
        f"temperature; achieved: of the tokens drawn. Shortfall: target tokens the group's "
        f"rules cannot give. Filtering Stats' Rows / Epoch are phase 0's.",
    ]
    for phase in report.phases:
        lines += [
            "",
            f"**Phase {phase.index}** (epoch_{phase.first_epoch} to epoch_{phase.last_epoch}): "
            f"budget {phase.tokens_per_epoch:,} tokens, temperature {phase.temperature:g}; "
            f"drew {phase.achieved_rows:,} rows, {phase.achieved_tokens:,.0f} tokens",
            "",
            _HEADER,
            "".join(char if char == "|" else "-" for char in _HEADER),
        ]
        for g in phase.groups:
            lines.append(
                f"| **{g.group}** | {g.weight:g} | {g.target_share:.2%} | {g.achieved_share:.2%} "
                f"| {g.target_tokens:,.0f} | {g.achieved_tokens:,.0f} | {g.target_rows:,.2f} "
                f"| {g.achieved_rows:,} | {g.shortfall_tokens:,.0f} |"
            )
    lines.append("")
    return "\n".join(lines) + "\n"
