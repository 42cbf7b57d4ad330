"""The index tokenization scans each cleaned file against, and the encoder's options for the
two sidecars (:mod:`hrm_assets.contamination.sidecar`): built from the evaluation sets saved
under ``$HRM_DATA_ROOT/eval/``, once per process for the same files."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.common.hashing import file_sha256
from hrm_assets.contamination.evalsets import EvalSet, eval_set_specs, read_eval_set
from hrm_assets.contamination.scan import DEFAULT_MIN_WORDS, DEFAULT_N, Scanner
from hrm_assets.contamination.sidecar import EVAL_FOLDER, OBSERVE_ENV, index_label


@dataclass
class TokenizationIndex:
    """The index tokenization scans against and its label."""

    scanner: Scanner
    label: dict


_CACHED: dict[tuple, TokenizationIndex] = {}


def saved_eval_sets(folder: Path) -> list[tuple[EvalSet, str]]:
    """The evaluation sets saved in ``folder`` (``eval/<name>.jsonl``), with their SHA-256."""
    found = []
    for spec in eval_set_specs():
        path = Path(folder) / f"{spec.name}.jsonl"
        if path.is_file():
            found.append((read_eval_set(spec, path), file_sha256(path)))
    return found


def tokenization_index(
    folder: Path, n: int | None = None, min_words: int | None = None
) -> TokenizationIndex | None:
    """The index of the evaluation sets saved in ``folder`` (None when none is), built once per
    process for the same files."""
    n = DEFAULT_N if n is None else n
    min_words = DEFAULT_MIN_WORDS if min_words is None else min_words
    paths = sorted(Path(folder).glob("*.jsonl")) if Path(folder).is_dir() else []
    if not paths:
        return None
    stamp = tuple((str(path), path.stat().st_size, path.stat().st_mtime_ns) for path in paths)
    key = (stamp, n, min_words)
    if key not in _CACHED:
        loaded = saved_eval_sets(folder)
        if not loaded:
            return None
        scanner = Scanner([eval_set for eval_set, _ in loaded], n, min_words)
        label = index_label([(s.spec.name, sha) for s, sha in loaded], n, min_words)
        _CACHED.clear()
        _CACHED[key] = TokenizationIndex(scanner, label)
    return _CACHED[key]


def scan_options(data_root: Path) -> dict:
    """Keyword arguments of ``_core.Encoder.tokenize_files`` for the sidecars: duplicate keys
    always, the contamination scan when evaluation sets are saved under ``data_root/eval``.
    Empty when ``$HRM_TOKENIZE_CONTAMINATION`` is ``0``."""
    if os.environ.get(OBSERVE_ENV, "1").strip() == "0":
        return {}
    index = tokenization_index(Path(data_root) / EVAL_FOLDER)
    if index is None:
        return {"observe": True}
    return {
        "observe": True,
        "scan_index": index.scanner.index,
        "scan_label": json.dumps(index.label, sort_keys=True),
    }
