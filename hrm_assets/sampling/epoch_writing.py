"""Drawing and writing every epoch's span arrays: data_io's uniform draw
(:mod:`hrm_assets.sampling.epoch_draw`) or, with a mixture in the rules, the mixture's plan
and phased draw (:mod:`hrm_assets.sampling.mixture`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from hrm_assets.common.progress import progress_bar
from hrm_assets.sampling.arrays import ManifestEntry
from hrm_assets.sampling.config import SamplingConfig, SamplingError
from hrm_assets.sampling.epoch_draw import draw_epochs
from hrm_assets.sampling.mixture.allocation import (
    MixtureAllocationError,
    MixturePlan,
    TaskSupply,
    allocate_mixture,
)
from hrm_assets.sampling.mixture.config import MixtureConfig, MixtureConfigError, effective_phases
from hrm_assets.sampling.mixture.draw import draw_mixture_epochs
from hrm_assets.sampling.mixture.groups import task_groups
from hrm_assets.sampling.prefix_config import PrefixRule
from hrm_assets.sampling.task_folders import SPAN_FIELDS, Spans
from hrm_assets.sampling.task_reports import TaskReport


@dataclass(frozen=True)
class WrittenEpochs:
    """What drawing the epochs wrote and counted."""

    tokens: list[int]  # each epoch's instruction + response tokens
    total_tokens: np.int64  # their int64 sum (data_io's total, before dividing by the epochs)
    hits: np.ndarray  # int64, per kept row: how many times it was drawn over all epochs
    entries: dict[str, ManifestEntry]  # each array written, by its path relative to the output
    phase_hits: list[np.ndarray] = field(default_factory=list)  # per mixture phase; none without


@dataclass(frozen=True)
class MixtureDemand:
    """A mixture's plan and what it asks of each task (:func:`plan_mixture`)."""

    plan: MixturePlan
    reports: list[TaskReport]  # rows_per_epoch: the first epoch's rows
    largest: list[TaskReport]  # rows_per_epoch: the most over the phases, for the budget check


def write_epochs(
    staged: Path,
    reports: list[TaskReport],
    kept: Spans,
    kept_bounds: np.ndarray,
    config: SamplingConfig,
    progress: bool,
    plan: MixturePlan | None = None,
) -> WrittenEpochs:
    """Draw every epoch of the ``kept`` rows (each task's ``kept_bounds`` slice) and write its
    arrays into ``staged`` (:mod:`hrm_assets.sampling.epoch_draw`; with a mixture ``plan``,
    :mod:`hrm_assets.sampling.mixture.draw`)."""
    columns = {name: getattr(kept, name) for name in SPAN_FIELDS}
    lengths = kept.inst_len + kept.resp_len
    task_rows = np.diff(kept_bounds).tolist()
    with progress_bar(progress, total=config.epochs, desc="Generating epoch indices") as bar:
        advance = (lambda: bar.update(1)) if progress else None
        if plan is not None:
            phased = draw_mixture_epochs(
                staged, columns, lengths, task_rows, plan, config.seed, progress=advance
            )
            return WrittenEpochs(
                phased.tokens,
                _int64_total(phased.tokens),
                phased.hits,
                phased.entries,
                phased.phase_hits,
            )
        tasks = [
            (rows, report.rows_per_epoch) for rows, report in zip(task_rows, reports, strict=True)
        ]
        draws = draw_epochs(
            staged, columns, lengths, tasks, config.epochs, config.seed, progress=advance
        )
    return WrittenEpochs(draws.tokens, _int64_total(draws.tokens), draws.hits, draws.entries)


def _int64_total(tokens: list[int]) -> np.int64:
    return np.array(tokens, dtype=np.int64).sum(dtype=np.int64)


def plan_mixture(
    mixture: MixtureConfig,
    reports: list[TaskReport],
    rules: list[PrefixRule],
    config: SamplingConfig,
) -> MixtureDemand:
    """The mixture's rows per task per epoch (:mod:`hrm_assets.sampling.mixture.allocation`)."""
    try:
        groups = task_groups(
            [report.name for report in reports], rules, mixture, config.prefix_config_path
        )
        plan = allocate_mixture(
            effective_phases(mixture),
            [
                TaskSupply(
                    name=report.name,
                    group=group,
                    capacity=report.rows_per_epoch,
                    rows=report.stats.rows,
                    tokens=report.stats.tokens,
                )
                for report, group in zip(reports, groups, strict=True)
            ],
            config.epochs,
            mixture.group_by,
        )
    except MixtureConfigError as exc:
        raise SamplingError(str(exc)) from None
    except MixtureAllocationError as exc:
        raise SamplingError(f"{config.prefix_config_path}: mixture: {exc}") from None
    first = plan.phases[0].task_rows
    largest = [max(rows) for rows in zip(*(p.task_rows for p in plan.phases), strict=True)]
    return MixtureDemand(
        plan,
        [replace(r, rows_per_epoch=n) for r, n in zip(reports, first, strict=True)],
        [replace(r, rows_per_epoch=n) for r, n in zip(reports, largest, strict=True)],
    )
