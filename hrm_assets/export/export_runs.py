"""One export from start to finish: hold the rows still, write them, describe the result.

:func:`export_megatron` and :func:`export_packed` are what the CLI and the Dagster assets call.
Each reads a sampled epoch (``sampled_dir`` and ``epoch``) or a whole tokenized root
(``tokenized_dir``), writes into an atomic output folder with ``manifest.json`` and an
``export.json`` that says what the folder holds, and returns an :class:`ExportSummary`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hrm_assets.common.manifest import MEGATRON_KIND, PACKED_KIND
from hrm_assets.export.megatron import DEFAULT_PREFIX, write_megatron
from hrm_assets.export.output_folder import export_folder
from hrm_assets.export.packed_writer import ARRAY_DTYPES, PAD_ID, write_packed
from hrm_assets.export.packing import pack_rows
from hrm_assets.export.row_source import RowTable, held_rows
from hrm_assets.sampling import defaults

EXPORT_FILE = "export.json"
MEGATRON_FORMAT = f"hrm-data-{MEGATRON_KIND}/1"
PACKED_FORMAT = f"hrm-data-{PACKED_KIND}/1"
# Source files listed in export.json at most (a corpus has thousands); all are counted.
LISTED_FILES = 10_000


@dataclass
class ExportSummary:
    """Figures of one export, for the CLI's report and the asset's metadata."""

    kind: str
    output: str
    source: dict[str, Any]
    token_dtype: str
    rows: int
    sequences: int
    tokens: int
    response_tokens: int
    files: dict[str, dict[str, Any]]
    capacity_tokens: int | None = None
    packing_efficiency: float | None = None
    overlong_rows: int = 0
    overlong_examples: list[int] = field(default_factory=list)
    # Packed sequences by how full they are (bucket label -> sequences).
    fill_buckets: dict[str, int] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


FILL_BUCKETS = (1.0, 0.99, 0.95, 0.9, 0.75, 0.5, 0.0)


def fill_buckets(sequence_tokens: np.ndarray, capacity: int) -> dict[str, int]:
    """Sequences by fill (filled tokens / capacity): ``100%``, ``99-100%``, ..., ``0-50%``."""
    fill = np.asarray(sequence_tokens, dtype=np.float64) / capacity
    counts: dict[str, int] = {"100%": int(np.count_nonzero(fill >= 1.0))}
    for upper, lower in zip(FILL_BUCKETS, FILL_BUCKETS[1:], strict=False):
        label = f"{lower:.0%}-{upper:.0%}"
        counts[label] = int(np.count_nonzero((fill >= lower) & (fill < upper)))
    return counts


def _inputs(sampled_dir: Path | None, tokenized_dir: Path | None) -> list[Path]:
    return [Path(path) for path in (sampled_dir, tokenized_dir) if path is not None]


def _export_json(summary: ExportSummary, table: RowTable, extra: dict[str, Any]) -> bytes:
    description = {
        **extra,
        "source": summary.source,
        "settings": summary.settings,
        "token_dtype": summary.token_dtype,
        "rows": summary.rows,
        "sequences": summary.sequences,
        "tokens": summary.tokens,
        "response_tokens": summary.response_tokens,
        "tokenizer_info": table.tokenizer_info,
        "source_files": table.file_rows()[:LISTED_FILES],
        "source_file_count": len(table.token_files),
    }
    return (json.dumps(description, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def export_megatron(
    output: Path,
    *,
    sampled_dir: Path | None = None,
    epoch: int = 0,
    tokenized_dir: Path | None = None,
    prefix: str = DEFAULT_PREFIX,
    progress: bool = False,
) -> ExportSummary:
    """Write a Megatron indexed dataset of the rows (``hrm_assets.export.megatron``) into the
    folder ``output``; errors name the file, row and field. ``prefix`` is a plain file name."""
    if not prefix or prefix in (".", "..") or "/" in prefix or "\0" in prefix:
        raise ValueError(f"--prefix must be a plain file name, got {prefix!r}")
    with (
        held_rows(sampled_dir=sampled_dir, epoch=epoch, tokenized_dir=tokenized_dir) as held,
        export_folder(output, _inputs(sampled_dir, tokenized_dir), MEGATRON_KIND) as staged,
    ):
        table = held.table
        written = write_megatron(table, staged.folder, prefix=prefix, progress=progress)
        for name, entry in written.files.items():
            staged.add(name, entry)
        summary = ExportSummary(
            kind="megatron",
            output=str(output),
            source=table.source,
            token_dtype=str(written.dtype),
            rows=table.rows,
            sequences=written.sequences,
            tokens=written.tokens,
            response_tokens=written.response_tokens,
            files=written.files,
            settings={"prefix": prefix},
        )
        staged.write_bytes(
            EXPORT_FILE,
            _export_json(
                summary,
                table,
                {
                    "format": MEGATRON_FORMAT,
                    "path_prefix": prefix,
                    "response_start": f"{prefix}.response_start.npy",
                    "documents": "one per row; document_indices = 0, 1, ..., rows",
                },
            ),
        )
        held.confirm()  # before the rename publishes it
    return summary


def export_packed(
    output: Path,
    *,
    sampled_dir: Path | None = None,
    epoch: int = 0,
    tokenized_dir: Path | None = None,
    context_size: int | None = None,
    seed: int = defaults.SEED.default,
    progress: bool = False,
    warn: Callable[[str], None] | None = None,
) -> ExportSummary:
    """Pack the rows first-fit-decreasing by ``seed`` into sequences of ``context_size``
    tokens (default: the sampled folder's ``max_seq_len``, or the sampler's default for a
    tokenized root) and write them (``hrm_assets.export.packed_writer``) into ``output``.

    Rows longer than ``context_size`` are not packed: they are counted, listed in
    ``overlong_rows.npy`` and ``export.json``, and ``warn`` hears of them.
    """
    with (
        held_rows(sampled_dir=sampled_dir, epoch=epoch, tokenized_dir=tokenized_dir) as held,
        export_folder(output, _inputs(sampled_dir, tokenized_dir), PACKED_KIND) as staged,
    ):
        table = held.table
        capacity = context_size or table.context_size or defaults.CONTEXT_SIZE.default
        if capacity < 2:
            raise ValueError(f"context_size must be at least 2, got {capacity}")
        plan = pack_rows(table.row_lengths, capacity, seed)
        overlong = len(plan.overlong_rows)
        if overlong and warn is not None:
            longest = int(table.row_lengths[plan.overlong_rows].max())
            warn(
                f"{table.description}: {overlong} row(s) longer than context_size={capacity} "
                f"(longest {longest} tokens) not packed; listed in overlong_rows.npy"
            )
        written = write_packed(table, plan, staged.folder, progress=progress)
        for name, entry in written.files.items():
            staged.add(name, entry)
        packed_rows = plan.row_order
        summary = ExportSummary(
            kind="packed",
            output=str(output),
            source=table.source,
            token_dtype=str(written.token_dtype),
            rows=len(packed_rows),
            sequences=plan.sequences,
            tokens=plan.packed_tokens,
            response_tokens=int(table.resp_len[packed_rows].sum()),
            files=written.files,
            capacity_tokens=plan.sequences * capacity,
            packing_efficiency=plan.efficiency,
            overlong_rows=overlong,
            overlong_examples=[int(row) for row in plan.overlong_rows[:10]],
            fill_buckets=fill_buckets(plan.sequence_tokens, capacity),
            settings={"context_size": capacity, "seed": seed},
        )
        staged.write_bytes(
            EXPORT_FILE,
            _export_json(
                summary,
                table,
                {
                    "format": PACKED_FORMAT,
                    "algorithm": "first-fit-decreasing, ties and sequence order by seed",
                    "pad_id": PAD_ID,
                    "array_dtypes": {name: str(dtype) for name, dtype in ARRAY_DTYPES.items()},
                    "capacity_tokens": summary.capacity_tokens,
                    "packing_efficiency": summary.packing_efficiency,
                    "overlong_rows": overlong,
                    "source_rows": table.rows,
                    "longest_row": int(table.row_lengths.max()) if table.rows else 0,
                    "rows_per_sequence_max": int(np.diff(plan.sequence_offsets).max())
                    if plan.sequences
                    else 0,
                },
            ),
        )
        held.confirm()  # before the rename publishes it
    return summary
