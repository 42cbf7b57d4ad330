"""Exact duplicates of (instruction, response) after the contamination normalization.

Two rows are duplicates when their instructions have the same words and their responses have
the same words (case, punctuation and whitespace aside; docs/CONTAMINATION.md). Rows are seen in
the order they are added (sources in the order given, files in name order, rows in file order):
the first copy of a row is kept, every later copy is a duplicate of the source that had the
first one. Counts are per source pair ``(first, later)``; ``(a, a)`` are repeats within ``a``.

Keys are 64-bit hashes computed in the Rust core (``_core.duplicate_keys``); the index keeps one
key and one source number per distinct row (about 16 bytes, plus the hash table's slack).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hrm_assets import _core


@dataclass
class DuplicateReport:
    rows: dict[str, int] = field(default_factory=dict)
    """Rows seen per source."""
    duplicates: dict[str, int] = field(default_factory=dict)
    """Rows of each source that repeat an earlier row (of any source)."""
    pairs: dict[tuple[str, str], int] = field(default_factory=dict)
    """``(source of the first copy, source of the later copy)`` -> rows."""

    def within(self, source: str) -> int:
        return self.pairs.get((source, source), 0)

    def across(self) -> int:
        return sum(count for (first, later), count in self.pairs.items() if first != later)

    def to_dict(self) -> dict:
        return {
            "rows": dict(self.rows),
            "duplicates": dict(self.duplicates),
            "pairs": [
                {"first": first, "later": later, "rows": count}
                for (first, later), count in sorted(self.pairs.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: dict) -> DuplicateReport:
        return cls(
            rows=dict(data["rows"]),
            duplicates=dict(data["duplicates"]),
            pairs={(p["first"], p["later"]): p["rows"] for p in data["pairs"]},
        )


class DuplicateCounter:
    """Rows added source by source; which ones repeat an earlier row, and counts per pair."""

    def __init__(self) -> None:
        self._core = _core
        self._index = _core.DuplicateIndex()
        self._ids: dict[str, int] = {}
        self._names: list[str] = []
        self._rows: Counter[str] = Counter()
        self._duplicates: Counter[str] = Counter()
        self._pairs: Counter[tuple[str, str]] = Counter()

    @property
    def index(self):
        """The Rust core's ``DuplicateIndex`` (``NgramIndex.scan_file`` records rows in it)."""
        return self._index

    def source_id(self, source: str) -> int:
        if source not in self._ids:
            self._ids[source] = len(self._names)
            self._names.append(source)
        return self._ids[source]

    def add(self, source: str, instructions: Sequence[str], responses: Sequence[str]) -> list[bool]:
        """Add rows of ``source``; for each, whether it repeats an earlier row."""
        keys = self._core.duplicate_keys(list(instructions), list(responses))
        return self.add_keys(source, keys)

    def add_keys(self, source: str, keys: list[int]) -> list[bool]:
        firsts = self._index.add(self.source_id(source), keys)
        self._rows[source] += len(keys)
        repeated = [first is not None for first in firsts]
        self._count_firsts(source, [first for first in firsts if first is not None])
        return repeated

    def add_keys_file(self, source: str, rows: int, path: Path) -> list[int]:
        """Add the ``rows`` rows of ``source`` whose keys a tokenized folder's sidecar holds
        (read by the Rust core); the rows (from 1) that repeat an earlier row."""
        repeated = self._index.add_keys_file(self.source_id(source), str(path))
        self._rows[source] += rows
        self._count_firsts(source, [first for _, first in repeated])
        return [row for row, _ in repeated]

    def _count_firsts(self, source: str, firsts: list[int]) -> None:
        """Count repeats in ``source`` of rows first seen in the sources numbered ``firsts``."""
        self._duplicates[source] += len(firsts)
        for first, count in Counter(firsts).items():
            self._pairs[(self._names[first], source)] += count

    def record_file(self, source: str, rows: int, repeated: list[tuple[int, int]]) -> None:
        """Count a file of ``rows`` rows of ``source`` that ``NgramIndex.scan_file`` recorded in
        :attr:`index`; ``repeated`` are its ``(row, first source number)``."""
        self._rows[source] += rows
        self._count_firsts(source, [first for _, first in repeated])

    def report(self) -> DuplicateReport:
        return DuplicateReport(
            rows={name: self._rows[name] for name in self._names},
            duplicates={name: self._duplicates[name] for name in self._names},
            pairs=dict(self._pairs),
        )
