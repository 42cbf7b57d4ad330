"""From a mixture's weights to rows per task per epoch.

For each phase (:class:`hrm_assets.sampling.mixture.config.Phase`):

1. Shares: ``share_g = w_g ** (1/T) / sum_h w_h ** (1/T)`` over the groups that have tasks
   in the tokenized root (a weight of 0 stays 0 at any temperature).
2. Target tokens: ``target_g = tokens_per_epoch * share_g``.
3. What a group can give: each task's rule allows ``capacity_t = min(max_per_file, rows_t) *
   repeat`` rows per epoch (data_io's count, so ``repeat`` is what permits repeating rows), of
   ``mean_t = tokens_t / rows_t`` tokens on average (rows and tokens kept after the length
   rules, ``long_context`` applied). A group's capacity is ``sum_t capacity_t * mean_t``.
4. Every task of a group is scaled alike, keeping the rules' proportions inside the group:
   ``scale_g = min(1, target_g / capacity_g)`` and ``quota_t = scale_g * capacity_t`` rows.
   A group whose capacity is below its target gives all it has; the difference is its
   shortfall, reported, not moved to other groups.
5. Whole rows by largest remainders within each group: the group takes
   ``round(sum_t quota_t)`` rows; each task gets ``floor(quota_t)``, and the rows left go one
   each to the largest fractional parts (ties: task order). So every task is within one row
   of its exact quota and never above its capacity.

Nothing here is random: the rows themselves are drawn from the seed by
:mod:`hrm_assets.sampling.mixture.draw`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hrm_assets.sampling.mixture.config import OTHERS_GROUP, Phase


class MixtureAllocationError(ValueError):
    """The mixture does not fit the data (a task in no group); the message names the tasks."""


@dataclass(frozen=True)
class TaskSupply:
    """One task as the allocation sees it: its group and what its rule lets it give."""

    name: str
    group: str | None  # None: in no group the weights name
    capacity: int  # rows per epoch the rule allows: min(max_per_file, rows) * repeat
    rows: int  # rows kept after the length rules
    tokens: int  # their tokens

    @property
    def mean_tokens(self) -> float:
        return self.tokens / self.rows if self.rows else 0.0


@dataclass(frozen=True)
class GroupAllocation:
    """One group in one phase (figures per epoch)."""

    group: str
    weight: float
    tasks: int
    target_share: float
    target_tokens: float
    capacity_tokens: float
    quota_rows: float  # exact rows before rounding
    rows: int
    expected_tokens: float  # rows times their tasks' mean tokens

    @property
    def shortfall_tokens(self) -> float:
        return max(0.0, self.target_tokens - self.capacity_tokens)


@dataclass(frozen=True)
class PhaseAllocation:
    phase: Phase
    epochs: range
    groups: list[GroupAllocation]
    task_quotas: list[float]  # exact rows per epoch, in task order
    task_rows: list[int]  # whole rows per epoch, in task order

    @property
    def rows_per_epoch(self) -> int:
        return sum(self.task_rows)


@dataclass(frozen=True)
class MixturePlan:
    group_by: str
    task_groups: list[str]  # each task's group, in task order
    phases: list[PhaseAllocation]
    warnings: list[str]

    def epoch_rows(self) -> list[int]:
        return [phase.rows_per_epoch for phase in self.phases for _ in phase.epochs]


def temperature_shares(weights: Sequence[float], temperature: float) -> list[float]:
    """``w ** (1/T)`` renormalised (computed in log space, so a small ``T`` cannot overflow);
    zero weights stay zero. All zero: all zero."""
    logs = [math.log(weight) / temperature if weight > 0 else None for weight in weights]
    present = [value for value in logs if value is not None]
    if not present:
        return [0.0] * len(weights)
    top = max(present)
    powered = [math.exp(value - top) if value is not None else 0.0 for value in logs]
    total = sum(powered)
    return [value / total for value in powered]


def largest_remainders(quotas: Sequence[float], seats: int) -> list[int]:
    """Whole numbers summing to ``seats``, each ``floor(quota)`` or one more: the extra ones
    go to the largest fractional parts, ties to the earlier index. ``seats`` must lie between
    the sum of the floors and that sum plus the number of non-integer quotas."""
    floors = [math.floor(quota) for quota in quotas]
    extra = seats - sum(floors)
    order = sorted(range(len(quotas)), key=lambda i: (-(quotas[i] - floors[i]), i))
    for index in order[:extra]:
        floors[index] += 1
    return floors


def _group_names(phases: Sequence[Phase], tasks: Sequence[TaskSupply]) -> list[str]:
    """Groups in the order the weights name them, then the others."""
    names: dict[str, None] = {}
    for phase in phases:
        names.update(dict.fromkeys(phase.weights))
    if any(task.group is None for task in tasks):
        names[OTHERS_GROUP] = None
    return list(names)


def _check_every_task_has_a_group(phases: Sequence[Phase], tasks: Sequence[TaskSupply]) -> None:
    if any(phase.others is not None for phase in phases):
        return
    loose = [task.name for task in tasks if task.group is None and task.capacity > 0]
    if loose:
        shown = ", ".join(loose[:5]) + (f" and {len(loose) - 5} more" if len(loose) > 5 else "")
        raise MixtureAllocationError(
            f"{len(loose)} task(s) are in no group the mixture's weights name: {shown}; give "
            f"their group a weight, or set mixture.others (0 leaves them out)"
        )


def _allocate_phase(
    phase: Phase,
    epochs: range,
    tasks: Sequence[TaskSupply],
    groups: list[str],
    members: dict[str, list[int]],
) -> PhaseAllocation:
    """One phase's shares, targets and rows (module docstring); ``members``: each group's
    task indices."""
    weights = [
        (phase.others or 0.0) if group == OTHERS_GROUP else phase.weights.get(group, 0.0)
        for group in groups
    ]
    present = [bool(members[group]) for group in groups]
    shares = temperature_shares(
        [weight if has_tasks else 0.0 for weight, has_tasks in zip(weights, present, strict=True)],
        phase.temperature,
    )
    quotas = [0.0] * len(tasks)
    rows = [0] * len(tasks)
    allocations = []
    for group, weight, share in zip(groups, weights, shares, strict=True):
        indices = members[group]
        target = phase.tokens_per_epoch * share
        capacity = sum(tasks[i].capacity * tasks[i].mean_tokens for i in indices)
        scale = min(1.0, target / capacity) if capacity > 0 else 0.0
        group_quotas = [scale * tasks[i].capacity for i in indices]
        total = sum(group_quotas)
        seats = min(math.floor(total + 0.5), sum(tasks[i].capacity for i in indices))
        group_rows = largest_remainders(group_quotas, seats)
        for i, quota, count in zip(indices, group_quotas, group_rows, strict=True):
            quotas[i], rows[i] = quota, count
        allocations.append(
            GroupAllocation(
                group=group,
                weight=weight,
                tasks=len(indices),
                target_share=share,
                target_tokens=target,
                capacity_tokens=capacity,
                quota_rows=total,
                rows=sum(group_rows),
                expected_tokens=sum(
                    count * tasks[i].mean_tokens
                    for i, count in zip(indices, group_rows, strict=True)
                ),
            )
        )
    return PhaseAllocation(phase, epochs, allocations, quotas, rows)


def allocate_mixture(
    phases: Sequence[Phase], tasks: Sequence[TaskSupply], epochs: int, group_by: str = "rule"
) -> MixturePlan:
    """Rows per task per epoch for every phase (module docstring); phases must start below
    ``epochs`` (:func:`hrm_assets.sampling.mixture.config.check_phases_fit`). Raises
    :class:`MixtureAllocationError` for tasks that can give rows but are in no group."""
    _check_every_task_has_a_group(phases, tasks)
    groups = _group_names(phases, tasks)
    members: dict[str, list[int]] = {group: [] for group in groups}
    for index, task in enumerate(tasks):
        members[OTHERS_GROUP if task.group is None else task.group].append(index)
    warnings = [
        f"mixture weight for {group!r}: no task of the tokenized root is in this group; it "
        f"takes no share"
        for group in groups
        if not members[group]
    ]
    starts = [phase.first_epoch for phase in phases] + [epochs]
    allocated = [
        _allocate_phase(phase, range(start, end), tasks, groups, members)
        for phase, start, end in zip(phases, starts, starts[1:], strict=False)
    ]
    for allocation in allocated:
        for group in allocation.groups:
            if group.shortfall_tokens > 0 and group.target_tokens > 0:
                warnings.append(
                    f"mixture phase {allocation.phase.index} (epochs {allocation.epochs.start}-"
                    f"{allocation.epochs.stop - 1}): group {group.group!r} can give "
                    f"{group.capacity_tokens:,.0f} tokens per epoch of its target "
                    f"{group.target_tokens:,.0f} (shortfall {group.shortfall_tokens:,.0f}); "
                    f"its rule's max_per_file and repeat bound what it gives"
                )
    return MixturePlan(
        group_by=group_by,
        task_groups=[OTHERS_GROUP if task.group is None else task.group for task in tasks],
        phases=allocated,
        warnings=warnings,
    )
