"""Drawing the epochs of a mixture: each phase is one run of data_io's draw
(:func:`hrm_assets.sampling.epoch_draw.draw_epochs`, Rust or numpy) with the phase's rows per task.

Phase 0 draws from ``Philox(seed)``, as data_io's sampler does, so within it a task takes its
rows from successive permutations of its own rows exactly as there. A later phase draws from
its own generator, seeded from ``(seed, phase index)`` through numpy's ``SeedSequence``, and
every task starts it on a fresh permutation. Each phase is written into a hidden folder of the
staged output and its ``epoch_N`` folders are renamed to the phase's epoch numbers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hrm_assets.sampling.arrays import ManifestEntry
from hrm_assets.sampling.epoch_draw import draw_epochs
from hrm_assets.sampling.mixture.allocation import MixturePlan

PHASE_FOLDER = ".mixture-phase-{index}"


@dataclass
class PhasedDraws:
    tokens: list[int]  # each epoch's tokens
    hits: np.ndarray  # int64 per table row: draws over all epochs
    phase_hits: list[np.ndarray]  # the same, per phase
    entries: dict[str, ManifestEntry]  # by path relative to the output folder


def phase_seed(seed: int, phase: int) -> int:
    """The seed of a phase's generator: ``seed`` itself for phase 0, else 128 bits that numpy's
    ``SeedSequence`` spreads from ``(seed, phase)``."""
    if phase == 0:
        return seed
    high, low = np.random.SeedSequence([seed, phase]).generate_state(2, dtype=np.uint64).tolist()
    return (high << 64) | low


def draw_mixture_epochs(
    staged: Path,
    fields: dict[str, np.ndarray],
    lengths: np.ndarray,
    task_rows: list[int],
    plan: MixturePlan,
    seed: int,
    progress: Callable[[], None] | None = None,
) -> PhasedDraws:
    """Write ``staged/epoch_<n>/<field>.npy`` for every epoch of ``plan``; ``task_rows`` are
    each task's kept rows (the table's segments), the other arguments as for ``draw_epochs``."""
    tokens: list[int] = []
    hits = np.zeros(len(lengths), dtype=np.int64)
    phase_hits: list[np.ndarray] = []
    entries: dict[str, ManifestEntry] = {}
    for allocation in plan.phases:
        index = allocation.phase.index
        target = staged if index == 0 else staged / PHASE_FOLDER.format(index=index)
        target.mkdir(exist_ok=True)
        draws = draw_epochs(
            target,
            fields,
            lengths,
            list(zip(task_rows, allocation.task_rows, strict=True)),
            len(allocation.epochs),
            phase_seed(seed, index),
            progress=progress,
        )
        for relative, entry in draws.entries.items():
            folder, name = relative.split("/", 1)
            epoch = allocation.epochs.start + int(folder.removeprefix("epoch_"))
            entries[f"epoch_{epoch}/{name}"] = entry
        if index > 0:
            for offset in range(len(allocation.epochs)):
                os.rename(
                    target / f"epoch_{offset}",
                    staged / f"epoch_{allocation.epochs.start + offset}",
                )
            target.rmdir()
        tokens += draws.tokens
        hits += draws.hits
        phase_hits.append(draws.hits)
    return PhasedDraws(tokens=tokens, hits=hits, phase_hits=phase_hits, entries=entries)
