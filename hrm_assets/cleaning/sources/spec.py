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
from typing import TYPE_CHECKING, Any, Literal, Protocol

from hrm_assets.cleaning.rows import FIELDS, Row

if TYPE_CHECKING:
    from hrm_assets.cleaning.columnar import ColumnarRule

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
class SkippedRow:
    """Yielded by a cleaning function in place of a row it leaves out (a declared filter), so
    the row is counted under ``reason`` instead of vanishing; the record's other rows stay."""

    reason: str
    detail: str = ""


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
    - ``revision``: the Hub revision (commit, tag or branch) loaded from the Hub; ``None``, as
      data_io loads, is the dataset's default branch at the time of cleaning (unpinned).
    - ``output``: data_io's output path relative to the cleaned root (``gsm8k_train.jsonl``); its
      suffix must match ``format``. Sources that write one file per task set ``route`` as well;
      ``output`` is then the folder-like prefix they write under and no file is created for it.
    - ``outputs_by_condition``: for sources whose records give rows in several fixed files, one
      per condition (data_io's ``cot.parquet``/``direct.parquet`` pairs): ``(condition, path)``
      pairs; every row goes to the file of its condition, all of them are written even when
      empty, and ``output`` is the folder they share.
    - ``route_outputs``: for a routed source whose files are known in advance (ARB's five
      subjects): every path its route may give. They are all written even when empty, as
      data_io does, and they alone are the source's files (``writes``).
    - ``one_output_per_part``: for a routed source whose route depends on the raw part alone
      (dmmath's module files, SYNTH's shards): each part's file is written even when the part
      gives no rows, as data_io writes one file per input file.
    - ``columns``: the order of the fields in its files (JSONL keys, Parquet columns), as the
      source's data_io script builds its dicts; cleaned rows are always ``Row`` tuples.
    - ``clean``: pure function raw record -> cleaned rows; raises :class:`SkipRecord` where
      data_io would crash or assert.
    - ``rows_per_record``: how many rows a record gives, for sources where that is fixed
      (Omni-MATH: a ``cot`` and a ``direct`` row); a record skipped whole counts that many
      skipped rows (1, the least it could have given, where the number varies).
    - ``layout``: how raw files are found (Hub mirror by default) and how the demo is written.
    - ``demo``: invented records for the demo corpus (``python -m hrm_assets.demo``).
    - ``columnar``: the same rules on Arrow record batches (:mod:`hrm_assets.cleaning.columnar`),
      for a local-file source; the engine uses it instead of ``clean`` row by row, with the
      same rows, files and report.
    - ``rules_version``: a hash of cleaning rules kept outside the code (a declared source's
      entry in ``sources.yaml``), part of the source's code version; empty for code sources.
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
    outputs_by_condition: tuple[tuple[str, str], ...] = ()
    route_outputs: tuple[str, ...] = ()
    columns: tuple[str, ...] = FIELDS
    one_output_per_part: bool = False
    rows_per_record: int = 1
    rules_version: str = ""
    revision: str | None = None
    columnar: ColumnarRule | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"source name {self.name!r} must be non-empty and contain no '/'")
        if self.format not in ("jsonl", "parquet"):
            raise ValueError(f"{self.name}: unknown format {self.format!r}")
        if sorted(self.columns) != sorted(FIELDS):
            raise ValueError(f"{self.name}: columns {self.columns} must order {FIELDS}")
        if self.outputs_by_condition:
            if self.route is not None:
                raise ValueError(f"{self.name}: set route or outputs_by_condition, not both")
            folder = self.output.rstrip("/") + "/"
            for condition, path in self.outputs_by_condition:
                if not path.startswith(folder) or not path.endswith(f".{self.format}"):
                    raise ValueError(
                        f"{self.name}: output {path!r} of condition {condition!r} must be a "
                        f".{self.format} file under {folder!r}"
                    )
        elif self.route is None and not self.output.endswith(f".{self.format}"):
            raise ValueError(f"{self.name}: output {self.output!r} must end with .{self.format}")
        if Path(self.output).is_absolute() or ".." in Path(self.output).parts:
            raise ValueError(f"{self.name}: output {self.output!r} must be a relative path")
        if self.one_output_per_part and self.route is None:
            raise ValueError(f"{self.name}: one_output_per_part needs a route")
        if self.route_outputs:
            if self.route is None:
                raise ValueError(f"{self.name}: route_outputs needs a route")
            for path in self.route_outputs:
                if not path.endswith(f".{self.format}") or Path(path).is_absolute() or ".." in path:
                    raise ValueError(f"{self.name}: bad route output {path!r}")

    def revision_option(self) -> dict[str, str]:
        """``{"revision": ...}`` for the Hub calls when pinned, else nothing (the calls stay
        data_io's)."""
        return {} if self.revision is None else {"revision": self.revision}

    def output_of(self, record: Record, part: str) -> str:
        """The relative output path that the rows of ``record`` go to."""
        if self.route is None:
            return self.output
        return self.checked_route(self.route(record, part))

    def checked_route(self, path: str) -> str:
        """``path``, a routed output, if it is one this source may write; else ValueError."""
        if not path.endswith(f".{self.format}") or Path(path).is_absolute() or ".." in path:
            raise ValueError(f"{self.name}: route gave a bad output path {path!r}")
        if self.route_outputs and path not in self.route_outputs:
            raise ValueError(f"{self.name}: route gave {path!r}, not one of its route_outputs")
        return path

    def part_output(self, part: str) -> str:
        """The output of a part of a ``one_output_per_part`` source (its route, which reads
        no record)."""
        if not self.one_output_per_part:
            raise ValueError(f"{self.name}: outputs are not one per part")
        return self.output_of({}, part)

    def output_of_row(self, row: object, record_output: str) -> str:
        """The relative output path of one produced row (``record_output`` unless the source
        has ``outputs_by_condition``); ValueError for a condition with no file."""
        if not self.outputs_by_condition:
            return record_output
        condition = row[0] if isinstance(row, tuple) and row else None
        if isinstance(row, Mapping):
            condition = row.get("condition")
        for known, path in self.outputs_by_condition:
            if condition == known:
                return path
        known = [c for c, _ in self.outputs_by_condition]
        raise ValueError(f"{self.name}: no output for condition {condition!r} (known: {known})")

    @property
    def static_outputs(self) -> tuple[str, ...]:
        """Outputs known before reading (always written, even when empty, as data_io does)."""
        if self.outputs_by_condition:
            return tuple(dict.fromkeys(path for _, path in self.outputs_by_condition))
        if self.route_outputs:
            return self.route_outputs
        return () if self.route is not None else (self.output,)

    def writes(self, relative: str) -> bool:
        """True when the cleaned file at ``relative`` (posix, under the cleaned root) is one of
        this source's outputs: a static output, or a file of its format under a routed folder."""
        if self.route is None or self.route_outputs:
            return relative in self.static_outputs
        folder = self.output.rstrip("/") + "/"
        return relative.startswith(folder) and relative.endswith(f".{self.format}")
