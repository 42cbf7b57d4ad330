"""The data card of a sampling run as one plain, deterministic dict (``datacard.json``).

Everything in it comes from the run's own figures (the ones the analytics report prints), the
manifest of the files it wrote, the prefix_config it applied and the code that ran: no
timestamps, no host names and no absolute paths, so the same inputs give the same card in any
output folder. Shares of the mix are fractions of the tokens (and rows) sampled over all
epochs, the figures a training run actually sees.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hrm_assets.sampling.datacard.task_sources import sources_of_tasks

if TYPE_CHECKING:  # annotations only
    from hrm_assets.cleaning.sources import SourceSpec
    from hrm_assets.sampling.result import SamplingResult
    from hrm_assets.sampling.task_reports import TaskReport

CARD_FORMAT = "hrm-data-datacard/1"
TOKENIZER_JSON_FILE = "tokenizer/tokenizer.json"

# Integer figures summed from tasks to sources and to the totals.
COUNT_FIELDS = (
    "rows_available",
    "tokens_available",
    "rows_kept",
    "tokens_kept",
    "rows_dropped",
    "rows_dropped_short",
    "rows_dropped_long",
    "rows_dropped_short_after_truncate",
    "rows_dropped_contaminated",
    "rows_dropped_duplicate",
    "rows_truncated",
    "rows_short_after_truncate",
    "rows_per_epoch",
    "sampled_rows",
    "sampled_tokens",
    "unique_rows",
    "unique_tokens",
)


@dataclass(frozen=True)
class PrefixConfigRecord:
    """The rules file a run applied: its file name (not its path), verbatim text, SHA-256 of
    its bytes and the rules as parsed, in order."""

    file_name: str
    text: str
    sha256: str
    rules: list[dict[str, Any]]


def _task_counts(task: TaskReport) -> dict[str, int]:
    s = task.stats
    return {
        "rows_available": s.source_rows,
        "tokens_available": task.token_count,
        "rows_kept": s.rows,
        "tokens_kept": s.tokens,
        "rows_dropped": s.rows_dropped,
        "rows_dropped_short": s.rows_dropped_short,
        "rows_dropped_long": s.rows_dropped_long,
        "rows_dropped_short_after_truncate": s.rows_dropped_short_after_truncate,
        "rows_dropped_contaminated": s.rows_dropped_contaminated,
        "rows_dropped_duplicate": s.rows_dropped_duplicate,
        "rows_truncated": s.rows_truncated,
        "rows_short_after_truncate": s.rows_short_after_truncate,
        "rows_per_epoch": task.rows_per_epoch,
        "sampled_rows": s.covered_rows,
        "sampled_tokens": s.covered_tokens,
        "unique_rows": s.unique_rows,
        "unique_tokens": s.unique_tokens,
    }


def _sum_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return {name: sum(int(record[name]) for record in records) for name in COUNT_FIELDS}


def _with_shares(counts: dict[str, int], totals: Mapping[str, int], epochs: int) -> dict[str, Any]:
    """``counts`` plus the per-epoch mean and the shares of the whole mix."""

    def share(name: str) -> float:
        return counts[name] / totals[name] if totals[name] else 0.0

    return {
        **counts,
        "sampled_tokens_per_epoch": counts["sampled_tokens"] / epochs,
        "token_share": share("sampled_tokens"),
        "row_share": share("sampled_rows"),
    }


def _rule_record(task: TaskReport) -> dict[str, Any]:
    rule = task.rule
    return {
        "prefix": task.matched_prefix,
        "max_per_file": rule.max_per_file,
        "repeat": rule.repeat,
        "long_context": rule.long_context,
    }


def _source_sort_key(name: str | None) -> tuple[bool, str]:
    return (name is None, name or "")


def _source_records(
    tasks: list[dict[str, Any]],
    specs: Mapping[str, SourceSpec],
    totals: Mapping[str, int],
    epochs: int,
) -> list[dict[str, Any]]:
    by_source: dict[str | None, list[dict[str, Any]]] = {}
    for task in tasks:
        by_source.setdefault(task["source"], []).append(task)
    records = []
    for name in sorted(by_source, key=_source_sort_key):
        members = by_source[name]
        spec = specs.get(name) if name is not None else None
        prefixes = {task["rule"]["prefix"] for task in members}
        records.append(
            {
                "name": name,
                "hub_id": spec.hub_id if spec is not None else None,
                "hub_configs": list(spec.configs) if spec and spec.configs is not None else None,
                "hub_split": spec.split if spec is not None else None,
                "hub_revision": spec.revision if spec is not None else None,
                "tasks": len(members),
                "rule_prefixes": sorted(prefixes, key=_source_sort_key),
                **_with_shares(_sum_counts(members), totals, epochs),
            }
        )
    return records


def plain_data(value: Any) -> Any:
    """A pydantic model, dataclass, mapping or sequence as plain JSON-friendly values."""
    if hasattr(value, "model_dump"):
        return plain_data(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain_data(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(key): plain_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(item) for item in value]
    return value


def build_data_card(
    result: SamplingResult,
    *,
    files: Mapping[str, Mapping[str, Any]],
    manifest_sha256: str,
    prefix_config: PrefixConfigRecord,
    tokenizer_sha256: str | None,
    code: Mapping[str, str],
    specs: Mapping[str, SourceSpec],
    cleaned_corpora: Sequence[Mapping[str, Any]] = (),
    contamination: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The card of one run (``datacard.json``'s content).

    ``files`` is the run's manifest (relative path -> size and SHA-256), ``manifest_sha256``
    the SHA-256 of ``manifest.json`` itself; ``tokenizer_sha256`` the tokenizer the task
    folders record (``None`` for data_io's folders: then that of the shipped
    ``tokenizer/tokenizer.json``, if any); ``specs`` the source registry, for the Hub ids.
    The mixture section is present only when the result carries one; the ``cleaned_corpora``
    section (the published cleaned corpora the tasks were made from,
    hrm_assets.adoption.provenance) only when some are credited; the ``contamination``
    section (hrm_assets.contamination.datacard_section) only when the task folders have
    sidecars.
    """
    config = result.config
    epochs = config.epochs
    task_source = sources_of_tasks([task.name for task in result.tasks], specs)
    counts = [(task, _task_counts(task)) for task in result.tasks]
    totals = _sum_counts([figures for _, figures in counts])
    tasks = [
        {
            "name": task.name,
            "category": task.category,
            "source": task_source[task.name],
            "rule": _rule_record(task),
            **_with_shares(figures, totals, epochs),
        }
        for task, figures in counts
    ]
    tokenizer_info = result.metadata.get("tokenizer_info") or {}
    shipped = files.get(TOKENIZER_JSON_FILE)
    card: dict[str, Any] = {
        "format": CARD_FORMAT,
        "code": dict(code),
        "sampling": {
            "seed": config.seed,
            "epochs": epochs,
            "context_size": config.context_size,
            "min_resp_length": config.min_resp_length,
            "drop_short_after_truncate": config.drop_short_after_truncate,
            "decontaminate": config.decontaminate,
            "dedup": config.dedup,
            "token_dtype": result.token_dtype,
            "tokens_npy_tokens": result.total_tokens,
            "total_length": result.total_length,
        },
        "prefix_config": {
            "file": prefix_config.file_name,
            "sha256": prefix_config.sha256,
            "text": prefix_config.text,
            "rules": prefix_config.rules,
        },
        "tokenizer": {
            "sha256": tokenizer_sha256 or (shipped["sha256"] if shipped else None),
            "vocab_size": tokenizer_info.get("vocab_size"),
            "boq": tokenizer_info.get("boq"),
            "eoq": tokenizer_info.get("eoq"),
            "eoa": tokenizer_info.get("eoa"),
            "condition_mapping": tokenizer_info.get("condition_mapping"),
            "shipped": shipped is not None,
        },
        "totals": _with_shares(totals, totals, epochs),
        "sources": _source_records(tasks, specs, totals, epochs),
        "tasks": tasks,
        "epochs": [
            {"epoch": index, "rows": rows, "tokens": tokens}
            for index, (rows, tokens) in enumerate(
                zip(result.epoch_rows, result.epoch_tokens, strict=True)
            )
        ],
        "outputs": {
            "files": {name: dict(entry) for name, entry in sorted(files.items())},
            "manifest_sha256": manifest_sha256,
        },
    }
    if cleaned_corpora:
        card["cleaned_corpora"] = [dict(corpus) for corpus in cleaned_corpora]
    if contamination is not None:
        card["contamination"] = plain_data(contamination)
    if result.mixture is not None:  # hrm_assets.sampling.mixture.report.MixtureReport
        card["mixture"] = plain_data(result.mixture)
    return card
