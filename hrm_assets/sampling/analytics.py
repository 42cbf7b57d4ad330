"""The sampling report: data_io's Markdown analytics, and the same figures as plain records.

:func:`render_report` starts with exactly what data_io's ``sample_tokenized.py`` prints
(``### Category Coverage Stats``, ``### Task Coverage Stats``, ``### Global Summary``) and then
adds sections data_io does not have (filtering per task, tokens per epoch). The record helpers
return plain dicts and lists of JSON-friendly values, ready for Dagster table metadata.
"""

from __future__ import annotations

from collections.abc import Iterable

from hrm_assets.sampling.mixture.report import render_mixture_section
from hrm_assets.sampling.sampler import GLOBAL_CATEGORY, CoverageStats, SamplingResult

_COVERAGE_HEADER = (
    "| Name | Rows (%) | Tokens (%) | Cov Rows (%) | Cov Toks (%) | Cov IToks (%) | Cov RToks (%) |"
)


def _num(value: int) -> str:
    return f"{value:,}"


def _num_pct(value: int, total: int) -> str:
    return f"{_num(value)} ({value / max(1, total):.1%})"


def _ratio(value: int, total: int) -> float:
    return value / total if total else 0.0


def _separator(header: str) -> str:
    return "".join(char if char == "|" else "-" for char in header)


def _coverage_table(
    title: str, rows: Iterable[tuple[str, CoverageStats]], ref: CoverageStats
) -> list[str]:
    lines = ["", f"### {title} Coverage Stats", _COVERAGE_HEADER, _separator(_COVERAGE_HEADER)]
    for name, s in sorted(rows, key=lambda item: item[0]):
        lines.append(
            f"| **{name}** | {_num_pct(s.rows, ref.rows)} | {_num_pct(s.tokens, ref.tokens)} "
            f"| {_num_pct(s.covered_rows, ref.covered_rows)} "
            f"| {_num_pct(s.covered_tokens, ref.covered_tokens)} "
            f"| {_num_pct(s.covered_inst_tokens, ref.covered_inst_tokens)} "
            f"| {_num_pct(s.covered_resp_tokens, ref.covered_resp_tokens)} |"
        )
    return lines


def render_data_io_report(result: SamplingResult) -> str:
    """The three sections data_io prints, character for character (ends with a blank line)."""
    ref = result.global_stats
    category_rows = [(GLOBAL_CATEGORY, ref), *result.categories.items()]
    lines = _coverage_table("Category", category_rows, ref)
    lines += _coverage_table("Task", [(task.name, task.stats) for task in result.tasks], ref)
    lines += [
        "",
        "### Global Summary",
        f"**Total Unique Tokens Sampled:** {_num(ref.unique_tokens)} out of {_num(ref.tokens)} "
        f"({ref.unique_tokens / max(1, ref.tokens):.2%})",
        f"**Total Unique Rows Sampled:** {_num(ref.unique_rows)} out of {_num(ref.rows)} "
        f"({ref.unique_rows / max(1, ref.rows):.2%})",
        "",
    ]
    return "\n".join(lines) + "\n"


def _rule_text(task) -> str:
    rule = task.rule
    cap = "all" if rule.max_per_file is None else _num(rule.max_per_file)
    return f"cap {cap}, x{rule.repeat}, {rule.long_context}"


def _filtering_row(name: str, rule: str, s: CoverageStats, per_epoch: int) -> str:
    cells = [
        f"**{name}**",
        rule,
        _num(s.source_rows),
        *(
            _num_pct(value, s.source_rows)
            for value in (
                s.rows,
                s.rows_dropped_short,
                s.rows_dropped_long,
                s.rows_truncated,
                s.rows_short_after_truncate,
            )
        ),
        _num(per_epoch),
    ]
    return "| " + " | ".join(cells) + " |"


def _short_after_truncate_note(result: SamplingResult) -> str | None:
    """One line under the filtering table when truncation left rows below min_resp_length."""
    g, config = result.global_stats, result.config
    if not g.rows_short_after_truncate:
        return None
    kept = g.rows_short_after_truncate - g.rows_dropped_short_after_truncate
    if kept == 0:
        return (
            f"**Short after truncation:** {_num(g.rows_dropped_short_after_truncate)} rows "
            f"dropped (`drop_short_after_truncate=true`)."
        )
    return (
        f"**Short after truncation:** {_num(kept)} rows kept with a response shorter than "
        f"`min_resp_length={config.min_resp_length}`, as data_io keeps them. HRM-Text's own data "
        f"preparation drops one-token responses (a batch of only such rows crashes its "
        f"attention backward pass); `drop_short_after_truncate=true` excludes them."
    )


def _row_filter_note(result: SamplingResult) -> str | None:
    """One line under the filtering table for decontaminate= and dedup= (only when set)."""
    g, config = result.global_stats, result.config
    parts = []
    if config.decontaminate:
        parts.append(
            f"{_num(g.rows_dropped_contaminated)} rows sharing a word n-gram with an evaluation "
            "set (`decontaminate=true`)"
        )
    if config.dedup:
        parts.append(f"{_num(g.rows_dropped_duplicate)} repeated rows (`dedup=true`)")
    if not parts:
        return None
    return f"**Left out:** {'; '.join(parts)} (docs/CONTAMINATION.md)."


def render_extra_sections(result: SamplingResult) -> str:
    """Sections beyond data_io's: filtering per task and the epochs written.

    "Short After Trunc." counts rows that truncation left with fewer than ``min_resp_length``
    response tokens: kept (as data_io keeps them) unless ``drop_short_after_truncate`` is set,
    and then also counted in "Kept Rows"' complement.
    """
    header = (
        "| Task | Rule | Source Rows | Kept Rows | Dropped Short | Dropped Long | Truncated "
        "| Short After Trunc. | Rows / Epoch |"
    )
    lines = ["### Filtering Stats", header, _separator(header)]
    for task in result.tasks:
        lines.append(_filtering_row(task.name, _rule_text(task), task.stats, task.rows_per_epoch))
    per_epoch = sum(task.rows_per_epoch for task in result.tasks)
    lines.append(_filtering_row(GLOBAL_CATEGORY, "", result.global_stats, per_epoch))
    short_note = _short_after_truncate_note(result)
    if short_note:
        lines += ["", short_note]
    filter_note = _row_filter_note(result)
    if filter_note:
        lines += ["", filter_note]
    lines += ["", "### Epochs", "| Epoch | Rows | Tokens |", "|-------|------|--------|"]
    for epoch, (rows, tokens) in enumerate(
        zip(result.epoch_rows, result.epoch_tokens, strict=True)
    ):
        lines.append(f"| epoch_{epoch} | {_num(rows)} | {_num(tokens)} |")
    lines += [
        "",
        f"**tokens.npy:** {_num(result.total_tokens)} tokens ({result.token_dtype}); "
        f"**total_length:** {_num(result.total_length)} tokens per epoch on average",
        "",
    ]
    return "\n".join(lines)


def render_report(result: SamplingResult) -> str:
    """data_io's report followed by the extra sections (and, with a mixture, its targets
    against what was drawn)."""
    report = render_data_io_report(result) + render_extra_sections(result)
    if result.mixture is not None:
        report += "\n" + render_mixture_section(result.mixture)
    return report


def mixture_records(result: SamplingResult) -> list[dict[str, int | float | str]]:
    """One record per mixture phase and group (target against achieved shares, tokens and
    rows per epoch); none without a mixture."""
    return [] if result.mixture is None else result.mixture.records()


def summary_figures(result: SamplingResult) -> dict[str, int | float | str]:
    """Key figures of a run as a flat dict (Dagster metadata values)."""
    g = result.global_stats
    return {
        "tasks": len(result.tasks),
        "epochs": len(result.epoch_rows),
        "token_dtype": result.token_dtype,
        "tokens_npy_tokens": result.total_tokens,
        "source_rows": g.source_rows,
        "rows": g.rows,
        "tokens": g.tokens,
        "rows_dropped": g.rows_dropped,
        "rows_truncated": g.rows_truncated,
        "rows_short_after_truncate": g.rows_short_after_truncate,
        "rows_dropped_short_after_truncate": g.rows_dropped_short_after_truncate,
        "rows_per_epoch": result.epoch_rows[0] if result.epoch_rows else 0,
        "total_length": result.total_length,
        "sampled_rows": g.covered_rows,
        "sampled_tokens": g.covered_tokens,
        "unique_rows": g.unique_rows,
        "unique_tokens": g.unique_tokens,
        "unique_rows_fraction": _ratio(g.unique_rows, g.rows),
        "unique_tokens_fraction": _ratio(g.unique_tokens, g.tokens),
    }


def _stats_record(s: CoverageStats, ref: CoverageStats) -> dict[str, int | float]:
    return {
        "source_rows": s.source_rows,
        "rows": s.rows,
        "tokens": s.tokens,
        "rows_dropped": s.rows_dropped,
        "rows_dropped_short": s.rows_dropped_short,
        "rows_dropped_long": s.rows_dropped_long,
        "rows_truncated": s.rows_truncated,
        "rows_short_after_truncate": s.rows_short_after_truncate,
        "sampled_rows": s.covered_rows,
        "sampled_tokens": s.covered_tokens,
        "token_share": _ratio(s.tokens, ref.tokens),
        "sampled_token_share": _ratio(s.covered_tokens, ref.covered_tokens),
        "unique_tokens_fraction": _ratio(s.unique_tokens, s.tokens),
    }


def category_records(result: SamplingResult) -> list[dict[str, int | float | str]]:
    """One record per category (sorted): sizes, drops and its share of the sampled tokens."""
    tasks_per_category: dict[str, int] = {}
    for task in result.tasks:
        tasks_per_category[task.category] = tasks_per_category.get(task.category, 0) + 1
    return [
        {
            "category": name,
            "tasks": tasks_per_category[name],
            **_stats_record(s, result.global_stats),
        }
        for name, s in sorted(result.categories.items())
    ]


def task_records(result: SamplingResult) -> list[dict[str, int | float | str | None]]:
    """One record per task (sorted): its rule, sizes, drops and share of the sampled tokens."""
    return [
        {
            "task": task.name,
            "category": task.category,
            "prefix": task.matched_prefix,
            "max_per_file": task.rule.max_per_file,
            "repeat": task.rule.repeat,
            "long_context": task.rule.long_context,
            "rows_per_epoch": task.rows_per_epoch,
            **_stats_record(task.stats, result.global_stats),
        }
        for task in result.tasks
    ]


def epoch_records(result: SamplingResult) -> list[dict[str, int]]:
    """One record per epoch written: its rows and tokens."""
    return [
        {"epoch": epoch, "rows": rows, "tokens": tokens}
        for epoch, (rows, tokens) in enumerate(
            zip(result.epoch_rows, result.epoch_tokens, strict=True)
        )
    ]
