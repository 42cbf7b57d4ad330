"""Whether the epochs the sampling rules ask for fit, checked against the data before any epoch
is allocated.

``repeat`` multiplies a task's rows in every epoch, with no limit of its own: a typo such as
``repeat: 100000000000`` used to reach numpy as "Unable to allocate 255. TiB". Once the rows
left after filtering are known, the sampler compares what the epochs need with what there is:
the epoch arrays (four int64 per drawn row, in each of ``epochs`` folders, plus ``tokens.npy``)
against the free space where the output is written, and one epoch as it is drawn in memory
against the memory available. The error names the rule that asks for the most rows.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.sampling.prefix_config import PrefixRule, SamplingRule

# Each drawn row is four int64 values in every epoch_N/ folder.
EPOCH_FILE_BYTES_PER_ROW = 4 * 8
# Drawing one epoch holds, per row: its table index, the shuffle's permutation and shuffled
# copy, and the four gathered columns (hrm_assets.sampling.epoch_draw), all int64.
DRAW_MEMORY_BYTES_PER_ROW = 7 * 8
MEMINFO = Path("/proc/meminfo")


class EpochBudgetError(ValueError):
    """The rules ask for more rows than fit; the message names the rule and its fields."""


@dataclass(frozen=True)
class TaskDemand:
    """Rows one task puts in every epoch, under the rule that applies to it."""

    name: str
    rule: SamplingRule
    rows_per_epoch: int


def available_memory() -> int | None:
    """``MemAvailable`` in bytes (Linux), ``None`` where it is not known."""
    try:
        for line in MEMINFO.read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def free_space(path: Path) -> int:
    """Free bytes (for this user) on the filesystem that holds ``path`` or would hold it."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def byte_size_text(count: int) -> str:
    """``count`` bytes in decimal units: ``512 B``, ``3.2 GB``, ``128.0 TB``."""
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if value < 1000 or unit == "PB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


def _largest_demand(demands: Sequence[TaskDemand], rules: Sequence[PrefixRule]) -> str:
    """The rule whose tasks ask for the most rows per epoch, as ``rule I (prefix P): fields``."""
    by_rule: dict[int, int] = {}
    for demand in demands:
        key = next((i for i, rule in enumerate(rules) if rule is demand.rule), -1)
        by_rule[key] = by_rule.get(key, 0) + demand.rows_per_epoch
    index = max(by_rule, key=lambda key: by_rule[key])
    if index < 0:
        return f"the tasks no rule matches (the defaults) ask for {by_rule[index]:,} rows per epoch"
    rule = rules[index]
    asked = f"repeat: {rule.repeat}" if rule.repeat > 1 else f"max_per_file: {rule.max_per_file}"
    rows = by_rule[index]
    return f"rule {index} (prefix {rule.prefix!r}): {asked} asks for {rows:,} rows per epoch"


def check_epoch_budget(
    demands: Sequence[TaskDemand],
    rules: Sequence[PrefixRule],
    *,
    epochs: int,
    token_bytes: int,
    output_path: Path,
    rules_path: Path,
    free_bytes: int | None = None,
    memory_bytes: int | None = None,
) -> None:
    """Raise :class:`EpochBudgetError` when the epochs ``demands`` add up to do not fit: their
    files (and ``token_bytes`` of ``tokens.npy``) in the free space where ``output_path`` is
    written (``free_bytes``, else measured), or one epoch being drawn in the available memory
    (``memory_bytes``, else ``MemAvailable``; not checked where unknown)."""
    rows = sum(demand.rows_per_epoch for demand in demands)
    if rows == 0:
        return
    files = epochs * rows * EPOCH_FILE_BYTES_PER_ROW + token_bytes
    free = free_space(output_path.parent) if free_bytes is None else free_bytes
    memory = available_memory() if memory_bytes is None else memory_bytes
    culprit = _largest_demand(demands, rules)
    if files > free:
        raise EpochBudgetError(
            f"{rules_path}: {culprit}; the {epochs} epoch(s) of {rows:,} rows would take "
            f"{byte_size_text(files)}, more than the {byte_size_text(free)} free for "
            f"{output_path}"
        )
    drawing = rows * DRAW_MEMORY_BYTES_PER_ROW
    if memory is not None and drawing > memory:
        raise EpochBudgetError(
            f"{rules_path}: {culprit}; drawing an epoch of {rows:,} rows takes "
            f"{byte_size_text(drawing)} of memory, more than the {byte_size_text(memory)} "
            f"available"
        )
