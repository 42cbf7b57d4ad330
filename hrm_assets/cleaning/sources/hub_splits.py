"""Hub datasets that data_io loads whole (``load_dataset(hub_id)``), every split in turn.

data_io iterates ``load_dataset(hub_id).values()``: the splits of the default config in the
order the dataset card lists them. A source of this kind names those splits, in that order, in
its ``split`` joined by ``+`` (``"train+test"``: the notation ``datasets`` uses for a
concatenation); each split is one part, loaded in streaming mode exactly as
:class:`~hrm_assets.cleaning.sources.hub.HubLayout` loads a config. The local mirror keeps the Hub
repository's files, usually ``<hub id>/data/<split>-*.parquet``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from hrm_assets.cleaning.sources.hub import HubLayout, iter_record_batches
from hrm_assets.cleaning.sources.spec import RawPart, Record, SourceSpec

SPLIT_SEPARATOR = "+"


@dataclass(frozen=True)
class HubSplitsLayout:
    """Every split named in ``spec.split`` (``a+b``), in that order, of config ``config``."""

    config_dir: str = "data"
    config: str = "default"

    def split_names(self, spec: SourceSpec) -> list[str]:
        names = spec.split.split(SPLIT_SEPARATOR)
        if not all(names) or len(set(names)) != len(names):
            raise ValueError(f"{spec.name}: bad split list {spec.split!r} (want 'a+b+...')")
        return names

    def _hub(self) -> HubLayout:
        return HubLayout(config_dir=self.config_dir)

    def _split_spec(self, spec: SourceSpec, split: str) -> SourceSpec:
        """``spec`` narrowed to one split of the one config, for HubLayout's methods."""
        return replace(spec, configs=(self.config,), split=split)

    def describe(self, spec: SourceSpec) -> str:
        return " then ".join(
            f"{spec.hub_id}/{self.config_dir}/{split}-*.parquet (or {split}.jsonl)"
            for split in self.split_names(spec)
        )

    def parts(self, spec: SourceSpec, raw_root: Path | None, batch_size: int) -> Iterator[RawPart]:
        hub = self._hub()
        for split in self.split_names(spec):
            dataset = hub.load(self._split_spec(spec, split), raw_root, self.config)
            yield RawPart(split, iter_record_batches(dataset, batch_size))

    def raw_files(self, spec: SourceSpec, raw_root: Path) -> list[Path]:
        hub = self._hub()
        return [
            path
            for split in self.split_names(spec)
            for path in hub.local_files(self._split_spec(spec, split), raw_root, self.config)[1]
        ]

    def write_parts(
        self, spec: SourceSpec, raw_root: Path, parts: Mapping[str, Iterable[Record]]
    ) -> list[Path]:
        """Write each split as the Hub does: ``<config_dir>/<split>-00000-of-00001.parquet``."""
        unknown = sorted(set(parts) - set(self.split_names(spec)))
        if unknown:
            raise ValueError(f"{spec.name}: parts {unknown} are not splits of {spec.split!r}")
        hub = self._hub()
        written = []
        for split, records in parts.items():
            split_spec = self._split_spec(spec, split)
            written.extend(hub.write_parts(split_spec, raw_root, {self.config: records}))
        return written
