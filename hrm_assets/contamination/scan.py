"""The contamination scan: every cleaned row (instruction and response) against the evaluation
sets' hashed word-n-gram index, and the exact-duplicate pass, in one read of each file.

A row is *hit* when its instruction or its response shares at least one window of ``n``
normalized words with an evaluation item (or contains a whole item of ``min_words`` to ``n - 1``
words). Results per file and per source: rows, rows hit, rows hit per evaluation set, and a few
examples (row, field, evaluation set and item, the matching span of the training text and the
evaluation text). docs/CONTAMINATION.md explains how to read them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hrm_assets.common.atomic import atomic_write_text
from hrm_assets.contamination.duplicates import DuplicateCounter, DuplicateReport
from hrm_assets.contamination.evalsets import EvalSet
from hrm_assets.contamination.sidecar import KEYS_FILE, sidecar_for

DEFAULT_N = 13
DEFAULT_MIN_WORDS = 8
DEFAULT_BATCH_ROWS = 8192
MAX_EXAMPLES = 5
SHOWN_CHARS = 300
FILES_PER_CALL = 16
"""Files scanned in parallel by one call to the Rust core (their duplicate keys are held until
the call ends: 16 bytes per row)."""
TEXT_FIELDS = ("instruction", "response")


@dataclass
class Example:
    row: int
    """1-based position of the row in its file."""
    field: str
    eval_set: str
    eval_item: int
    """0-based record of the evaluation set (its saved JSONL's line - 1)."""
    span: str
    """The training text covering every matching window (cut to 300 characters)."""
    eval_text: str
    windows: int


@dataclass
class Result:
    """Contamination of one file or one source."""

    name: str
    rows: int = 0
    rows_hit: int = 0
    hits_by_set: dict[str, int] = field(default_factory=dict)
    examples: list[Example] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.rows_hit / self.rows if self.rows else 0.0

    def to_dict(self) -> dict:
        data = asdict(self)
        data["rate"] = self.rate
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> Result:
        return cls(
            name=data["name"],
            rows=data["rows"],
            rows_hit=data["rows_hit"],
            hits_by_set=dict(data["hits_by_set"]),
            examples=[Example(**example) for example in data["examples"]],
        )

    def merge(self, other: Result, max_examples: int = MAX_EXAMPLES) -> None:
        self.rows += other.rows
        self.rows_hit += other.rows_hit
        for name, count in other.hits_by_set.items():
            self.hits_by_set[name] = self.hits_by_set.get(name, 0) + count
        room = max_examples - len(self.examples)
        self.examples.extend(other.examples[: max(room, 0)])


@dataclass
class FileScan:
    """One file's result and the rows to leave out (1-based), for the sampler."""

    path: str
    source: str
    result: Result
    hit_rows: list[int] = field(default_factory=list)
    duplicate_rows: list[int] = field(default_factory=list)


class Scanner:
    """The evaluation sets' index and the scan of training rows against it. The index is built
    at its first use: a report whose files all have current sidecars needs only the items'
    word counts (:attr:`indexed`)."""

    def __init__(
        self,
        eval_sets: Sequence[EvalSet],
        n: int = DEFAULT_N,
        min_words: int = DEFAULT_MIN_WORDS,
        max_examples: int = MAX_EXAMPLES,
    ) -> None:
        from hrm_assets import _core

        self.eval_sets = list(eval_sets)
        self.n, self.min_words, self.max_examples = n, min_words, max_examples
        self._index = None
        self.indexed: dict[str, dict[str, int]] = {}
        for loaded in self.eval_sets:
            counts = Counter(windowed=0, whole=0, too_short=0)
            for name in loaded.spec.fields:
                for words in _core.word_counts(list(loaded.texts[name])):
                    if words >= n:
                        counts["windowed"] += 1
                    elif words >= min_words:
                        counts["whole"] += 1
                    else:
                        counts["too_short"] += 1
            self.indexed[loaded.spec.name] = {"items": len(loaded), **counts}

    @property
    def index(self):
        """The Rust core's ``NgramIndex`` of every field of every evaluation set (set numbers
        in the order given, items numbered from 0 in each field)."""
        if self._index is None:
            from hrm_assets import _core

            index = _core.NgramIndex(self.n, self.min_words)
            for number, loaded in enumerate(self.eval_sets):
                for name in loaded.spec.fields:
                    index.add(number, loaded.texts[name])
            self._index = index
        return self._index

    def scan_rows(
        self, instructions: Sequence[str], responses: Sequence[str]
    ) -> list[tuple[str, tuple[int, int, int, int, int]] | None]:
        """Per row, None or ``(field, (set, item, start, end, windows))`` of its first hit field
        (the instruction before the response)."""
        rows = len(instructions)
        hits = self.index.scan([*instructions, *responses])
        out = []
        for row in range(rows):
            if hits[row] is not None:
                out.append(("instruction", hits[row]))
            elif hits[rows + row] is not None:
                out.append(("response", hits[rows + row]))
            else:
                out.append(None)
        return out

    def _file_scan(self, path, source: str, scanned, duplicates) -> FileScan:
        """A :class:`FileScan` from the Rust core's ``(rows, hits, repeated)``."""
        rows, hits, repeated = scanned
        scan = FileScan(str(path), source, Result(str(path)))
        result = scan.result
        if duplicates is not None:
            duplicates.record_file(source, rows, repeated)
            scan.duplicate_rows = [row for row, _ in repeated]
        # Counted by set number, then named: a file's hits are tens of thousands when its rows
        # copy an evaluation set, and only the first few become examples.
        hits_by_set: Counter[str] = Counter()
        for number, count in Counter(hit[2] for hit in hits).items():
            hits_by_set[self.eval_sets[number].spec.name] += count
        scan.hit_rows.extend(hit[0] for hit in hits)
        for hit in hits[: self.max_examples]:
            row, field_number, number, item, _start, _end, windows, span = hit
            loaded = self.eval_sets[number]
            result.examples.append(
                Example(
                    row=row,
                    field=TEXT_FIELDS[field_number],
                    eval_set=loaded.spec.name,
                    eval_item=item,
                    span=span,
                    eval_text=loaded.shown(item)[:SHOWN_CHARS],
                    windows=windows,
                )
            )
        result.rows = rows
        result.rows_hit = len(scan.hit_rows)
        result.hits_by_set = dict(sorted(hits_by_set.items()))
        return scan

    def scan_file(
        self,
        path: Path | str,
        source: str,
        duplicates: DuplicateCounter | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ) -> FileScan:
        """Scan one cleaned file (JSONL or Parquet, read by the Rust core's row reader: a bad
        row raises ``ValueError`` naming the file, row and field); with ``duplicates``, its rows
        are recorded there too, in the same read."""
        return self.scan_files([(path, source)], duplicates, batch_rows)[0]

    def scan_files(
        self,
        files: Sequence[tuple[Path | str, str]],
        duplicates: DuplicateCounter | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ) -> list[FileScan]:
        """:meth:`scan_file` of each ``(path, source)``, files in parallel in the Rust core;
        duplicates are recorded in the order of ``files``."""
        paths = [str(path) for path, _ in files]
        if duplicates is None:
            sources = [0] * len(files)
            index = None
        else:
            sources = [duplicates.source_id(source) for _, source in files]
            index = duplicates.index
        scanned = self.index.scan_files(paths, sources, index, batch_rows, SHOWN_CHARS)
        return [
            self._file_scan(path, source, one, duplicates)
            for (path, source), one in zip(files, scanned, strict=True)
        ]


@dataclass
class Report:
    """The whole pass: settings, the indexed evaluation sets, files, sources, duplicates."""

    n: int
    min_words: int
    eval_sets: dict[str, dict[str, int]]
    files: list[Result]
    sources: dict[str, Result]
    duplicates: DuplicateReport | None

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "min_words": self.min_words,
            "eval_sets": self.eval_sets,
            "files": [result.to_dict() for result in self.files],
            "sources": {name: result.to_dict() for name, result in self.sources.items()},
            "duplicates": None if self.duplicates is None else self.duplicates.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Report:
        duplicates = data.get("duplicates")
        return cls(
            n=data["n"],
            min_words=data["min_words"],
            eval_sets={name: dict(counts) for name, counts in data["eval_sets"].items()},
            files=[Result.from_dict(result) for result in data["files"]],
            sources={name: Result.from_dict(r) for name, r in data["sources"].items()},
            duplicates=None if duplicates is None else DuplicateReport.from_dict(duplicates),
        )

    def write(self, path: Path) -> None:
        """Save as JSON (temporary name, renamed)."""
        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=1, ensure_ascii=False))

    @classmethod
    def read(cls, path: Path) -> Report:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def analyze(
    files_by_source: Mapping[str, Sequence[Path | str]],
    eval_sets: Sequence[EvalSet],
    n: int = DEFAULT_N,
    min_words: int = DEFAULT_MIN_WORDS,
    dedup: bool = True,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    tokenized: Mapping[str, Path] | None = None,
    label: Mapping | None = None,
) -> tuple[Report, list[FileScan]]:
    """Scan every file of every source (sources in the order given, files in name order) for
    contamination and, with ``dedup``, exact duplicates; the report and each file's scan.

    ``tokenized`` maps a cleaned file (its path as a string) to its tokenized folder: a folder
    whose sidecars (:mod:`.sidecar`) were written from the file as it is now gives its duplicate
    keys, and its hits when they were scanned against ``label`` (this index's
    :func:`.sidecar.index_label`), without reading the file again; other files are read here."""

    scanner = Scanner(eval_sets, n, min_words)
    duplicates = DuplicateCounter() if dedup else None
    scans: list[FileScan] = []
    sources: dict[str, Result] = {}
    ordered = [
        (path, source)
        for source, files in files_by_source.items()
        for path in sorted(files, key=lambda p: Path(p).name)
    ]
    tokenized = tokenized or {}
    sidecars = [
        sidecar_for(tokenized[str(path)], Path(path)) if str(path) in tokenized else None
        for path, _ in ordered
    ]
    # Runs of files without sidecars are read in parallel (their duplicate keys recorded in
    # order); a file with sidecars takes its place in that order.
    pending: list[tuple[Path | str, str]] = []

    def read_pending() -> None:
        for start in range(0, len(pending), FILES_PER_CALL):
            chunk = pending[start : start + FILES_PER_CALL]
            scans.extend(scanner.scan_files(chunk, duplicates, batch_rows))
        pending.clear()

    for (path, source), sidecar in zip(ordered, sidecars, strict=True):
        if sidecar is None:
            pending.append((path, source))
            continue
        read_pending()
        if label is not None and sidecar.label == dict(label):
            scanned = (sidecar.rows, [tuple(hit) for hit in sidecar.hits], [])
            scan = scanner._file_scan(path, source, scanned, None)
        else:
            scan = scanner.scan_files([(path, source)], None, batch_rows)[0]
        if duplicates is not None:
            keys_file = sidecar.folder / KEYS_FILE
            scan.duplicate_rows = duplicates.add_keys_file(source, sidecar.rows, keys_file)
        scans.append(scan)
    read_pending()
    for source in files_by_source:
        total = Result(source)
        for scan in scans:
            if scan.source == source:
                total.merge(scan.result)
        total.hits_by_set = dict(sorted(total.hits_by_set.items()))
        sources[source] = total
    report = Report(
        n=n,
        min_words=min_words,
        eval_sets=scanner.indexed,
        files=[scan.result for scan in scans],
        sources=sources,
        duplicates=None if duplicates is None else duplicates.report(),
    )
    return report, scans
