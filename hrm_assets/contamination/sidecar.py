"""Both passes inside tokenization's own read of each cleaned file, kept beside the arrays.

The Rust core (``rust_tokenizer/src/ngram/observe.rs``) keys every row for duplicates and, when
evaluation sets are saved under ``$HRM_DATA_ROOT/eval/``, scans it against their n-gram index
while the encoder frames the same batch, and writes two sidecars into the tokenized folder:

- ``contamination.json``: the *label* of the index it scanned against (evaluation sets by name
  and SHA-256 of their saved JSONL, ``n``, ``min_words``; ``null`` without one), the rows, the
  hit rows ``[row, field, set, item, start, end, windows, span]`` numbered as the reader numbers
  them (a JSONL file's line numbers, blank lines counted), and ``row_lines``, ``[line,
  position]`` of each row after which lines and positions differ anew (blank lines skipped), so
  that a hit is placed among the tokenized rows (:meth:`Sidecar.hit_positions`);
- ``duplicate_keys.u64``: every row's duplicate key, little-endian, in row order.

Neither is an array or listed in ``manifest.json``: the arrays, ``metadata.json`` and the
manifest are the bytes data_io's identity covers, with or without sidecars. The evaluation sets
are not an input of tokenization: changing them re-tokenizes nothing; the report then finds the
label stale and rescans those files (:func:`hrm_assets.contamination.scan.analyze`).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from hrm_assets import _core

SCAN_FILE: str = _core.SCAN_SIDECAR_FILE
KEYS_FILE: str = _core.KEYS_SIDECAR_FILE
SCAN_FORMAT: str = _core.SCAN_SIDECAR_FORMAT
EVAL_FOLDER = "eval"
OBSERVE_ENV = "HRM_TOKENIZE_CONTAMINATION"
"""Set to ``0`` to tokenize without the sidecars."""


def index_label(eval_sets: Sequence[tuple[str, str]], n: int, min_words: int) -> dict:
    """What an index was built from: ``(name, sha256)`` of each evaluation set, in index order
    (the ``set`` numbers of the hits), ``n`` and ``min_words``."""
    return {
        "n": n,
        "min_words": min_words,
        "sets": [{"name": name, "sha256": sha256} for name, sha256 in eval_sets],
    }


@dataclass
class Sidecar:
    """A tokenized folder's sidecars, as read."""

    folder: Path
    label: dict | None
    rows: int
    hits: list[list]
    row_lines: list[list[int]] | None = None
    """``[line, position]`` pairs (None in sidecars written before they were recorded)."""

    def hit_positions(self) -> list[int]:
        """Each hit row's position among the tokenized rows (from 1): its line number less
        the blank lines before it. Without ``row_lines``, the line numbers as they are."""
        starts = [line for line, _ in self.row_lines or []]
        shifts = [line - position for line, position in self.row_lines or []]
        positions = []
        for hit in self.hits:
            last = bisect.bisect_right(starts, hit[0]) - 1
            positions.append(hit[0] - (shifts[last] if last >= 0 else 0))
        return positions

    def keys(self) -> list[int]:
        """Every row's duplicate key, in row order."""
        import numpy as np

        return np.fromfile(self.folder / KEYS_FILE, dtype="<u8").tolist()


def read_sidecar(folder: Path) -> Sidecar | None:
    """The sidecars of ``folder``, or None when it has none (or they are unreadable or of
    another format)."""
    folder = Path(folder)
    try:
        # orjson: a sidecar holds every hit with its span, megabytes where rows copy a set.
        data = orjson.loads((folder / SCAN_FILE).read_bytes())
        keys_size = (folder / KEYS_FILE).stat().st_size
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != SCAN_FORMAT:
        return None
    if keys_size != 8 * data.get("rows", -1):
        return None
    return Sidecar(folder, data.get("index"), data["rows"], data["hits"], data.get("row_lines"))


@dataclass(frozen=True)
class FolderOfObject:
    """The tokenized folder of a cleaned object (not downloaded, so with no file to stat), with
    the object's size and last-modified time as its listing shows them now."""

    folder: Path
    source_size: int
    source_mtime: float


def sidecar_for(folder: Path | FolderOfObject, cleaned: Path) -> Sidecar | None:
    """The sidecars of ``folder`` when its ``metadata.json`` records ``cleaned`` as it is now
    (same size and modification time, as the tokenized step records them; for a
    :class:`FolderOfObject`, the object's); else None."""
    try:
        if isinstance(folder, FolderOfObject):
            size, mtime, folder = folder.source_size, folder.source_mtime, folder.folder
        else:
            stat = Path(cleaned).stat()
            size, mtime, folder = stat.st_size, stat.st_mtime, Path(folder)
        metadata = json.loads((folder / "metadata.json").read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(metadata, dict):
        return None
    if metadata.get("source_size") != size or metadata.get("source_mtime") != int(mtime):
        return None
    sidecar = read_sidecar(folder)
    if sidecar is None or sidecar.rows != metadata.get("rows"):
        return None
    return sidecar


MAX_FOLDER_EXAMPLES = 5
FIELDS = ("instruction", "response")


def folder_summary(folder: Path) -> dict | None:
    """What a tokenized folder's sidecars say, for its partition's record: rows, rows hit,
    rows hit per evaluation set, the evaluation sets scanned against (None when none were
    saved at tokenization) and up to five examples with the matching span; None without
    sidecars."""
    sidecar = read_sidecar(folder)
    if sidecar is None:
        return None
    label = sidecar.label if isinstance(sidecar.label, dict) else None
    names = [entry["name"] for entry in label["sets"]] if label else None
    hits_by_set: dict[str, int] = {}
    examples = []
    for row, field, number, item, _start, _end, windows, span in sidecar.hits:
        name = names[number] if names and number < len(names) else str(number)
        hits_by_set[name] = hits_by_set.get(name, 0) + 1
        if len(examples) < MAX_FOLDER_EXAMPLES:
            examples.append(
                {
                    "row": row,
                    "field": FIELDS[field],
                    "eval_set": name,
                    "eval_item": item,
                    "windows": windows,
                    "span": span,
                }
            )
    return {
        "rows": sidecar.rows,
        "rows_hit": len(sidecar.hits),
        "hits_by_set": dict(sorted(hits_by_set.items())),
        "scanned_against": names,
        "n": label["n"] if label else None,
        "examples": examples,
    }
