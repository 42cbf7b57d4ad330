"""Each task's rule applied to its rows: what length filtering kept, where the task's tokens
sit in ``tokens.npy``, and the report figures of data_io's analytics (:class:`TaskReport`,
:class:`CoverageStats`), the draw figures filled in once the epochs are drawn."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np

from hrm_assets.sampling.config import SamplingConfig
from hrm_assets.sampling.prefix_config import PrefixRule, SamplingRule, rule_for
from hrm_assets.sampling.row_filters import row_drops
from hrm_assets.sampling.span_table import bounds_of, filter_lengths, segment_sums
from hrm_assets.sampling.task_folders import Spans

GLOBAL_CATEGORY = "GLOBAL"


def rows_per_epoch(rule: SamplingRule, rows: int) -> int:
    """Rows a task contributes to each epoch: ``min(max_per_file, rows) * repeat``."""
    wanted = rows if rule.max_per_file is None else min(rule.max_per_file, rows)
    return wanted * rule.repeat


def task_category(name: str) -> str:
    """The report's category: the task name up to the first ``__``."""
    return name.split("__")[0]


@dataclass(frozen=True)
class FilterCounts:
    kept: int
    dropped_short: int
    dropped_long: int
    truncated: int
    # Rows truncation left below min_resp_length (kept unless drop_short_after_truncate).
    short_after_truncate: int = 0
    # Of those, the rows excluded because drop_short_after_truncate was set.
    dropped_short_after_truncate: int = 0


def filter_rows(
    spans: Spans,
    rule: SamplingRule,
    context_size: int,
    min_resp_length: int,
    drop_short_after_truncate: bool = False,
) -> tuple[Spans, FilterCounts]:
    """Apply the length rules (:func:`hrm_assets.sampling.span_table.filter_lengths`) to one task;
    returns the kept rows (responses truncated) and the counts."""
    filtered = filter_lengths(
        spans.inst_len,
        spans.resp_len,
        rule.long_context == "truncate",
        context_size,
        min_resp_length,
        drop_short_after_truncate,
    )
    counts = FilterCounts(
        kept=int(np.count_nonzero(filtered.keep)),
        dropped_short=int(np.count_nonzero(filtered.dropped_short)),
        dropped_long=int(np.count_nonzero(filtered.dropped_long)),
        truncated=int(np.count_nonzero(filtered.truncated)),
        short_after_truncate=int(np.count_nonzero(filtered.short_after_truncate)),
        dropped_short_after_truncate=int(np.count_nonzero(filtered.dropped_short_after_truncate)),
    )
    kept = Spans(spans.inst_start, spans.inst_len, spans.resp_start, filtered.resp_len)
    return kept.select(filtered.keep), counts


@dataclass
class CoverageStats:
    """data_io's report figures for a task or a category, plus what filtering removed.

    ``rows``/``tokens`` count the rows kept after filtering (responses truncated). The
    ``covered_*`` figures count every draw over all epochs (a row drawn twice counts twice);
    ``unique_*`` count the rows drawn at least once.
    """

    rows: int = 0
    tokens: int = 0
    inst_tokens: int = 0
    resp_tokens: int = 0
    covered_rows: int = 0
    covered_tokens: int = 0
    covered_inst_tokens: int = 0
    covered_resp_tokens: int = 0
    unique_rows: int = 0
    unique_tokens: int = 0
    source_rows: int = 0
    rows_dropped_short: int = 0
    rows_dropped_long: int = 0
    rows_truncated: int = 0
    rows_short_after_truncate: int = 0
    rows_dropped_short_after_truncate: int = 0
    rows_dropped_contaminated: int = 0
    rows_dropped_duplicate: int = 0

    @property
    def rows_dropped(self) -> int:
        return (
            self.rows_dropped_short
            + self.rows_dropped_long
            + self.rows_dropped_short_after_truncate
            + self.rows_dropped_contaminated
            + self.rows_dropped_duplicate
        )

    @classmethod
    def total(cls, parts: Iterable[CoverageStats]) -> CoverageStats:
        """Every figure summed over ``parts``."""
        sums = dict.fromkeys(_COVERAGE_FIELDS, 0)
        for part in parts:
            values = vars(part)
            for name in _COVERAGE_FIELDS:
                sums[name] += values[name]
        return cls(**sums)


_COVERAGE_FIELDS = tuple(item.name for item in fields(CoverageStats))


@dataclass(frozen=True)
class TaskReport:
    """One task: its rule, where its tokens sit in ``tokens.npy`` and its statistics."""

    name: str
    category: str
    rule: SamplingRule
    matched_prefix: str | None
    token_offset: int
    token_count: int
    rows_per_epoch: int
    stats: CoverageStats


def report_tasks(
    names: list[str],
    table: Spans,
    bounds: np.ndarray,
    counts: list[int],
    rules: list[PrefixRule],
    config: SamplingConfig,
) -> tuple[list[TaskReport], Spans, np.ndarray]:
    """Apply each task's rule to the span table; returns the reports, the kept rows (offset
    into tokens.npy, responses truncated) and the bounds of each task's kept rows.

    Offsets follow the unfiltered token counts, since tokens.npy keeps filtered rows too.
    """
    task_rules = [rule_for(name, rules) for name in names]
    task_rows = np.diff(bounds)
    filtered = filter_lengths(
        table.inst_len,
        table.resp_len,
        np.repeat([rule.long_context == "truncate" for rule in task_rules], task_rows),
        config.context_size,
        config.min_resp_length,
        config.drop_short_after_truncate,
    )
    offsets = bounds_of(counts)
    row_offsets = np.repeat(offsets[:-1], task_rows)
    keep = filtered.keep
    # decontaminate= and dedup= (hrm_assets.sampling.row_filters): counted among the rows the
    # length rules kept, so each dropped row has one reason.
    drops = row_drops(config.tokenized_path, names, bounds, config.decontaminate, config.dedup)
    dropped_contaminated = np.zeros_like(keep)
    dropped_duplicate = np.zeros_like(keep)
    if drops is not None:
        dropped_contaminated = keep & drops.contaminated
        dropped_duplicate = keep & drops.duplicate
        keep = keep & ~drops.dropped
    kept = Spans(
        inst_start=(table.inst_start + row_offsets)[keep],
        inst_len=table.inst_len[keep],
        resp_start=(table.resp_start + row_offsets)[keep],
        resp_len=filtered.resp_len[keep],
    )
    kept_rows = segment_sums(keep, bounds)
    kept_bounds = bounds_of(kept_rows)
    per_task = {
        "rows": kept_rows,
        "inst_tokens": segment_sums(kept.inst_len, kept_bounds),
        "resp_tokens": segment_sums(kept.resp_len, kept_bounds),
        "dropped_short": segment_sums(filtered.dropped_short, bounds),
        "dropped_long": segment_sums(filtered.dropped_long, bounds),
        "truncated": segment_sums(filtered.truncated, bounds),
        "short_after": segment_sums(filtered.short_after_truncate, bounds),
        "dropped_short_after": segment_sums(filtered.dropped_short_after_truncate, bounds),
        "dropped_contaminated": segment_sums(dropped_contaminated, bounds),
        "dropped_duplicate": segment_sums(dropped_duplicate, bounds),
    }
    figures = {key: values.tolist() for key, values in per_task.items()}
    reports = []
    for index, (name, rule) in enumerate(zip(names, task_rules, strict=True)):
        inst_tokens, resp_tokens = figures["inst_tokens"][index], figures["resp_tokens"][index]
        stats = CoverageStats(
            rows=figures["rows"][index],
            tokens=inst_tokens + resp_tokens,
            inst_tokens=inst_tokens,
            resp_tokens=resp_tokens,
            source_rows=int(task_rows[index]),
            rows_dropped_short=figures["dropped_short"][index],
            rows_dropped_long=figures["dropped_long"][index],
            rows_truncated=figures["truncated"][index],
            rows_short_after_truncate=figures["short_after"][index],
            rows_dropped_short_after_truncate=figures["dropped_short_after"][index],
            rows_dropped_contaminated=figures["dropped_contaminated"][index],
            rows_dropped_duplicate=figures["dropped_duplicate"][index],
        )
        reports.append(
            TaskReport(
                name=name,
                category=task_category(name),
                rule=rule,
                matched_prefix=rule.prefix if isinstance(rule, PrefixRule) else None,
                token_offset=int(offsets[index]),
                token_count=counts[index],
                rows_per_epoch=rows_per_epoch(rule, figures["rows"][index]),
                stats=stats,
            )
        )
    return reports, kept, kept_bounds


def fill_coverage(
    reports: list[TaskReport], kept: Spans, kept_bounds: np.ndarray, hits: np.ndarray
) -> None:
    """Each task's draw figures, from how often each of its kept rows was drawn (``hits``)."""
    drawn = hits > 0
    figures = {
        "covered_rows": segment_sums(hits, kept_bounds),
        "covered_inst_tokens": segment_sums(kept.inst_len * hits, kept_bounds),
        "covered_resp_tokens": segment_sums(kept.resp_len * hits, kept_bounds),
        "unique_rows": segment_sums(drawn, kept_bounds),
        "unique_tokens": segment_sums(
            np.where(drawn, kept.inst_len + kept.resp_len, 0), kept_bounds
        ),
    }
    columns = {name: values.tolist() for name, values in figures.items()}
    for index, report in enumerate(reports):
        stats = report.stats
        for name, values in columns.items():
            setattr(stats, name, values[index])
        stats.covered_tokens = stats.covered_inst_tokens + stats.covered_resp_tokens
