"""What a sampling run returns: :class:`SamplingResult`, the figures of data_io's analytics
report and of the data card."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hrm_assets.sampling.config import SamplingConfig
from hrm_assets.sampling.mixture.report import MixtureReport
from hrm_assets.sampling.sampled_files import SampledMetadata
from hrm_assets.sampling.task_reports import CoverageStats, TaskReport
from hrm_assets.sampling.tokenizer_folder import TOKENIZER_DIR, TokenizerChoice


@dataclass(frozen=True)
class SamplingResult:
    """What a sampling run wrote and the figures of data_io's analytics report."""

    config: SamplingConfig
    output_path: Path
    token_dtype: str
    total_tokens: int
    tasks: list[TaskReport]
    categories: dict[str, CoverageStats]
    global_stats: CoverageStats
    epoch_rows: list[int]
    epoch_tokens: list[int]
    metadata: dict[str, Any]
    # The folder AutoTokenizer.from_pretrained loads (None: no tokenizer was found to ship).
    tokenizer_dir: Path | None = None
    warnings: list[str] = field(default_factory=list)
    # Target against achieved shares when prefix_config.yaml has a mixture
    # (hrm_assets.sampling.mixture).
    mixture: MixtureReport | None = None

    @property
    def total_length(self) -> int:
        return int(self.metadata["total_length"])


def sampling_result(
    config: SamplingConfig,
    output: Path,
    dtype: np.dtype,
    counts: list[int],
    reports: list[TaskReport],
    epoch_tokens: list[int],
    metadata: SampledMetadata,
    tokenizer: TokenizerChoice,
    warnings: list[str],
) -> SamplingResult:
    """The :class:`SamplingResult` of a run whose files are written."""
    by_category: dict[str, list[CoverageStats]] = {}
    for report in reports:
        by_category.setdefault(report.category, []).append(report.stats)
    categories = {name: CoverageStats.total(parts) for name, parts in by_category.items()}
    return SamplingResult(
        config=config,
        output_path=output,
        token_dtype=dtype.name,
        total_tokens=int(sum(counts)),
        tasks=reports,
        categories=dict(sorted(categories.items())),
        global_stats=CoverageStats.total(report.stats for report in reports),
        epoch_rows=[sum(report.rows_per_epoch for report in reports)] * config.epochs,
        epoch_tokens=epoch_tokens,
        metadata=json.loads(metadata.model_dump_json()),
        tokenizer_dir=output / TOKENIZER_DIR if tokenizer.tokenizer_json is not None else None,
        warnings=warnings,
    )
