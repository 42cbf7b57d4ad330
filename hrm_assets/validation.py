"""Consistency checks of outputs, shared by the asset checks and the tests.

Each function reads an output and returns a :class:`CheckReport`: ``problems`` is empty when
the output is sound. Arrays are memory-mapped, so checking a large folder does not load it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hrm_assets.common.settings import METADATA_FILE, TOKENS_FILE

if TYPE_CHECKING:
    import numpy as np

SPAN_ARRAYS = ("inst_start", "inst_len", "resp_start", "resp_len")
MAX_PROBLEMS = 20


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    figures: dict[str, int | float | str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.problems

    def problem(self, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)


def check_cleaned_files(paths: list[Path]) -> CheckReport:
    """Every row is three strings with known tags; empty responses and instructions counted."""
    from hrm_assets.cleaning.rows import RowError, iter_cleaned_rows

    report = CheckReport()
    rows = empty_responses = empty_instructions = 0
    for path in paths:
        try:
            for row in iter_cleaned_rows(path):
                rows += 1
                empty_responses += not row.response
                empty_instructions += not row.instruction
        except RowError as error:
            report.problem(str(error))
    if not paths:
        report.problem("the source has no cleaned files")
    report.figures.update(
        files=len(paths),
        rows=rows,
        empty_responses=empty_responses,
        empty_instructions=empty_instructions,
    )
    return report


# Arrays below this size are read whole in one call (a batched run checks thousands of small
# folders, where numpy.load's per-file cost dominated); larger ones are mapped.
_READ_WHOLE_BELOW = 64 << 20


def _load(folder: Path, name: str) -> np.ndarray:
    import numpy as np

    from hrm_assets.common.npy_files import load_integers_quickly

    path = folder / f"{name}.npy"
    if path.stat().st_size < _READ_WHOLE_BELOW:
        return load_integers_quickly(str(path))
    return np.load(path, mmap_mode="r")


def _span_problem(spans: dict, token_count: int, sampled: bool) -> str | None:
    """The first problem of a task's spans (``sampled=False``: the tokenized layout,
    :func:`hrm_assets.sampling.span_table.span_layout_problem`) or of a sampled epoch's
    (:func:`~hrm_assets.sampling.span_table.epoch_span_problem`) against ``token_count``
    tokens; the rule itself is stated there only."""
    import numpy as np

    from hrm_assets.sampling.span_table import epoch_span_problem, span_layout_problem

    lengths = {name: len(spans[name]) for name in SPAN_ARRAYS}
    if len(set(lengths.values())) != 1:
        return f"span arrays differ in length {lengths}"
    rule = epoch_span_problem if sampled else span_layout_problem
    return rule(
        *(np.asarray(spans[name]).astype(np.int64, copy=False) for name in SPAN_ARRAYS),
        token_count,
    )


def span_problems(folder: Path) -> list[str]:
    """The span rule applied to an output folder, as ``hrm-verify`` does after its manifest
    check: a sampled folder's every ``epoch_N`` against its ``tokens.npy``, a tokenized
    folder's spans against its own; each problem names the folder. Nothing for a folder with
    neither layout (the manifest check reports what is missing)."""
    folder = Path(folder)
    epochs = sorted(path for path in folder.glob("epoch_*") if path.is_dir())
    targets = epochs if epochs else [folder]
    if not (folder / TOKENS_FILE).is_file():
        return []
    problems = []
    from hrm_assets.common.npy_files import npy_layout

    try:
        token_count = npy_layout(folder / TOKENS_FILE).length
        for target in targets:
            spans = {name: _load(target, name) for name in SPAN_ARRAYS}
            problem = _span_problem(spans, token_count, sampled=bool(epochs))
            if problem is not None:
                problems.append(f"{target}: {problem}")
    except (OSError, ValueError) as error:
        problems.append(f"{folder}: spans unreadable: {error}")
    return problems


def check_tokenized_folder(folder: Path, vocab_size: int) -> CheckReport:
    """Spans laid out as the tokenizer writes them (:func:`hrm_assets.sampling.span_table.
    span_layout_problem`), ids below the vocabulary, row count as recorded, dtypes."""
    import numpy as np

    folder = Path(folder)
    report = CheckReport()
    try:
        tokens = _load(folder, "tokens")
        spans = {name: _load(folder, name) for name in SPAN_ARRAYS}
        metadata = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        report.problem(f"{folder.name}: unreadable: {error}")
        return report
    if tokens.dtype != np.dtype("<u4"):
        report.problem(f"{folder.name}: tokens.npy has dtype {tokens.dtype}, expected <u4")
    for name, array in spans.items():
        if array.dtype != np.dtype("<u8"):
            report.problem(f"{folder.name}: {name}.npy has dtype {array.dtype}, expected <u8")
    problem = _span_problem(spans, len(tokens), sampled=False)
    if problem is not None:
        report.problem(f"{folder.name}: {problem}")
    rows = len(spans["inst_start"])
    if "rows" in metadata and metadata["rows"] != rows:
        report.problem(f"{folder.name}: {rows} rows but metadata.json records {metadata['rows']}")
    max_id = int(tokens.max()) if len(tokens) else 0
    if len(tokens) and max_id >= vocab_size:
        report.problem(f"{folder.name}: token id {max_id} >= vocab size {vocab_size}")
    short = int(np.count_nonzero(np.asarray(spans["inst_len"]) < 2))
    if short:
        report.problem(f"{folder.name}: {short} instructions shorter than [BOQ, EOQ]")
    report.figures.update(rows=rows, tokens=len(tokens), max_token_id=max_id)
    return report


def check_sampled_folder(folder: Path, epochs: int | None = None) -> CheckReport:
    """The folder exists (``/dev/shm`` is wiped on reboot), the epoch count matches, every span
    lies inside ``tokens.npy`` and its dtype fits the vocabulary."""
    import numpy as np

    folder = Path(folder)
    report = CheckReport()
    if not folder.is_dir():
        report.problem(f"{folder}: sampled folder is missing (a RAM disk is wiped on reboot)")
        return report
    try:
        metadata = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
        tokens = np.load(folder / TOKENS_FILE, mmap_mode="r")
    except (OSError, ValueError) as error:
        report.problem(f"{folder}: unreadable: {error}")
        return report
    vocab_size = (metadata.get("tokenizer_info") or {}).get("vocab_size")
    if vocab_size is None:
        report.problem(f"{folder}: metadata.json has no tokenizer_info.vocab_size")
    elif vocab_size - 1 > np.iinfo(tokens.dtype).max:
        report.problem(f"{folder}: dtype {tokens.dtype} cannot hold vocab size {vocab_size}")
    found = sorted(
        int(p.name.split("_", 1)[1])
        for p in folder.glob("epoch_*")
        if p.is_dir() and p.name.split("_", 1)[1].isdigit()
    )
    if found != list(range(len(found))):
        report.problem(f"{folder}: epoch folders are not epoch_0..epoch_{len(found) - 1}: {found}")
    if epochs is not None and len(found) != epochs:
        report.problem(f"{folder}: {len(found)} epochs, expected {epochs}")
    rows = 0
    for epoch in found:
        epoch_dir = folder / f"epoch_{epoch}"
        try:
            spans = {
                name: np.load(epoch_dir / f"{name}.npy", mmap_mode="r") for name in SPAN_ARRAYS
            }
        except (OSError, ValueError) as error:
            report.problem(f"{epoch_dir}: unreadable: {error}")
            continue
        problem = _span_problem(spans, len(tokens), sampled=True)
        if problem is not None:
            report.problem(f"{epoch_dir.name}: {problem}")
        rows += len(spans["inst_start"])
    report.figures.update(epochs=len(found), rows=rows, tokens=len(tokens), dtype=str(tokens.dtype))
    return report
