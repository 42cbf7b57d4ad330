"""What a source is: where its raw records come from and how they become cleaned rows.

A source family module (``sources/<family>.py``) builds :class:`SourceSpec` objects from pure
functions; the package ``__init__`` collects them into the registry. Nothing here reads files:
that is the job of a :class:`RawLayout` (``sources/hub.py`` has the Hub one).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from hrm_assets.rows import Row

Record = Mapping[str, Any]
"""One raw record in the source's own schema (a Hub row, a decoded JSON object, ...)."""

OutputFormat = Literal["jsonl", "parquet"]


class SkipRecord(Exception):  # noqa: N818 - it is a signal, not an error of the pipeline
    """Raised by a cleaning function to skip one raw record (and every row it would give).

    ``reason`` is a short, stable category (it becomes a metadata key, so no row data in it);
    ``detail`` says what was wrong with this record.
    """

    def __init__(self, reason: str, detail: str = ""):
        self.reason, self.detail = reason, detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


@dataclass(frozen=True)
class RawPart:
    """One independently loaded piece of a source (a Hub config, a local sub-folder).

    ``batches`` yields lists of records in the source's order; it is consumed once.
    """

    name: str
    batches: Iterable[list[Record]]


class RawLayout(Protocol):
    """Where a source's raw records live, on the Hub or under a local raw root."""

    def parts(self, spec: SourceSpec, raw_root: Path | None, batch_size: int) -> Iterator[RawPart]:
        """The source's parts in data_io's order; ``raw_root=None`` means the Hub."""
        ...

    def write_parts(
        self, spec: SourceSpec, raw_root: Path, parts: Mapping[str, Iterable[Record]]
    ) -> list[Path]:
        """Lay records out under ``raw_root`` so that :meth:`parts` reads them back."""
        ...

    def raw_files(self, spec: SourceSpec, raw_root: Path) -> list[Path]:
        """Every local file :meth:`parts` would read (for content hashes of ``raw/<source>``)."""
        ...

    def describe(self, spec: SourceSpec) -> str:
        """Human-readable location of the raw files relative to the raw root."""
        ...


CleanFn = Callable[[Record, str], Iterable[Row]]
"""``clean(record, part_name)``: the cleaned rows of one raw record, in data_io's order."""

RouteFn = Callable[[Record, str], str]
"""``route(record, part_name)``: output path (relative to the cleaned root) of its rows."""

DemoFn = Callable[[random.Random], Mapping[str, Iterable[Record]]]
"""``demo(rng)``: a small invented raw corpus, records per part name, in the raw schema."""


@dataclass(frozen=True)
class SourceSpec:
    """A cleaned source: asset ``cleaned/<name>``.

    - ``hub_id``/``configs``/``split``: what data_io loads (``configs=None``: every config of the
      dataset, in ``get_dataset_config_names`` order).
    - ``output``: data_io's output path relative to the cleaned root (``gsm8k_train.jsonl``); its
      suffix must match ``format``. Sources that write one file per task set ``route`` as well;
      ``output`` is then the folder-like prefix they write under and no file is created for it.
    - ``clean``: pure function raw record -> cleaned rows; raises :class:`SkipRecord` where
      data_io would crash or assert.
    - ``layout``: how raw files are found (Hub mirror by default) and how the demo is written.
    - ``demo``: invented records for the demo corpus (``python -m hrm_assets.demo``).
    """

    name: str
    hub_id: str | None
    configs: tuple[str, ...] | None
    split: str
    output: str
    format: OutputFormat
    clean: CleanFn
    layout: RawLayout
    demo: DemoFn
    route: RouteFn | None = None
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"source name {self.name!r} must be non-empty and contain no '/'")
        if self.format not in ("jsonl", "parquet"):
            raise ValueError(f"{self.name}: unknown format {self.format!r}")
        if self.route is None and not self.output.endswith(f".{self.format}"):
            raise ValueError(f"{self.name}: output {self.output!r} must end with .{self.format}")
        if Path(self.output).is_absolute() or ".." in Path(self.output).parts:
            raise ValueError(f"{self.name}: output {self.output!r} must be a relative path")

    def output_of(self, record: Record, part: str) -> str:
        """The relative output path that the rows of ``record`` go to."""
        if self.route is None:
            return self.output
        path = self.route(record, part)
        if not path.endswith(f".{self.format}") or Path(path).is_absolute() or ".." in path:
            raise ValueError(f"{self.name}: route gave a bad output path {path!r}")
        return path

    @property
    def static_outputs(self) -> tuple[str, ...]:
        """Outputs known before reading (always written, even when empty, as data_io does)."""
        return () if self.route is not None else (self.output,)
