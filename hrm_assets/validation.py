"""Consistency checks of outputs, shared by the asset checks and the tests.

Each function reads an output and returns a :class:`CheckReport`: ``problems`` is empty when
the output is sound. Arrays are memory-mapped, so checking a large folder does not load it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hrm_assets.cleaning.rows import RowError, iter_cleaned_rows
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


def _check_spans(report: CheckReport, label: str, spans: dict, token_count: int) -> None:
    import numpy as np

    lengths = {name: len(spans[name]) for name in SPAN_ARRAYS}
    if len(set(lengths.values())) != 1:
        report.problem(f"{label}: span arrays differ in length {lengths}")
        return
    for start, length in (("inst_start", "inst_len"), ("resp_start", "resp_len")):
        starts = np.asarray(spans[start], dtype=np.int64)
        ends = starts + np.asarray(spans[length], dtype=np.int64)
        outside = np.flatnonzero((starts < 0) | (ends > token_count))
        if outside.size:
            i = int(outside[0])
            report.problem(
                f"{label}: {outside.size} {start} spans outside tokens.npy "
                f"(first at row {i}: [{int(starts[i])}, {int(ends[i])}) of {token_count})"
            )


def check_tokenized_folder(folder: Path, vocab_size: int) -> CheckReport:
    """Spans laid out as the tokenizer writes them (:func:`hrm_assets.sampling.span_table.
    span_layout_problem`), ids below the vocabulary, row count as recorded, dtypes."""
    import numpy as np

    from hrm_assets.sampling.span_table import span_layout_problem

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
    lengths = {name: len(array) for name, array in spans.items()}
    if len(set(lengths.values())) != 1:
        report.problem(f"{folder.name}: span arrays differ in length {lengths}")
    else:
        # The sampler's rule (rows back to back, within and covering tokens.npy), one copy.
        problem = span_layout_problem(
            *(np.asarray(spans[name]).astype(np.int64, copy=False) for name in SPAN_ARRAYS),
            len(tokens),
        )
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
        _check_spans(report, epoch_dir.name, spans, len(tokens))
        rows += len(spans["inst_start"])
    report.figures.update(epochs=len(found), rows=rows, tokens=len(tokens), dtype=str(tokens.dtype))
    return report
