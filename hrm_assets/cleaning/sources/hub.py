"""Hugging Face Hub datasets: streamed from the Hub, or from a local mirror of its repository.

A local raw root mirrors the Hub repository of each dataset, so a mirror is simply a download
of the repository's files::

    <raw root>/openai/gsm8k/main/train-00000-of-00001.parquet
    <raw root>/EleutherAI/hendrycks_math/algebra/train-00000-of-00001.parquet

In place of Parquet shards a config folder may hold ``<split>.jsonl`` (or ``<split>-*.jsonl``
shards). Either way the files are read with ``datasets`` in streaming mode, through the same
batch iteration as the Hub, so the local path exercises the Hub code.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.cleaning.sources.spec import RawPart, Record, SourceSpec
from hrm_assets.common.atomic import atomic_file

_PARQUET_PATTERNS = ("{split}-*.parquet", "{split}.parquet")
_JSONL_PATTERNS = ("{split}.jsonl", "{split}-*.jsonl")


def iter_record_batches(dataset: Iterable, batch_size: int) -> Iterator[list[dict]]:
    """Records of a (streaming) ``datasets`` dataset as lists of at most ``batch_size`` dicts."""
    for columns in dataset.iter(batch_size=batch_size):
        names = list(columns)
        rows = zip(*columns.values(), strict=True)
        yield [dict(zip(names, values, strict=True)) for values in rows]


@dataclass(frozen=True)
class HubLayout:
    """A Hub dataset repository; ``config_dir`` is a config's folder in it (``{config}``)."""

    config_dir: str = "{config}"

    def describe(self, spec: SourceSpec) -> str:
        config = "<config>" if spec.configs is None else spec.configs[0]
        folder = self.config_dir.format(config=config)
        return f"{spec.hub_id}/{folder}/{spec.split}-*.parquet (or {spec.split}.jsonl)"

    # -- reading ---------------------------------------------------------------------------

    def config_names(self, spec: SourceSpec, raw_root: Path | None) -> list[str]:
        """The configs to load, in the order data_io loads them.

        ``spec.configs`` when given; else every config: ``get_dataset_config_names`` on the Hub
        (the dataset card's order), or the sorted config folders of a local mirror that hold
        files of the split (the Hub lists configs alphabetically for converted datasets).
        """
        if spec.configs is not None:
            return list(spec.configs)
        if raw_root is None:
            from datasets import get_dataset_config_names

            return list(get_dataset_config_names(spec.hub_id, **spec.revision_option()))
        if self.config_dir != "{config}":
            raise ValueError(f"{spec.name}: cannot discover configs under {self.config_dir!r}")
        repo = self.repo_dir(spec, raw_root)
        if not repo.is_dir():
            raise FileNotFoundError(f"{spec.name}: raw folder {repo} does not exist")
        names = [
            entry.name
            for entry in sorted(repo.iterdir())
            if entry.is_dir() and not entry.name.startswith(".") and self._find(entry, spec.split)
        ]
        if not names:
            raise FileNotFoundError(
                f"{spec.name}: no config folder with {spec.split} files in {repo}"
            )
        return names

    def repo_dir(self, spec: SourceSpec, raw_root: Path) -> Path:
        if spec.hub_id is None:
            raise ValueError(f"{spec.name}: a Hub layout needs a hub_id")
        return Path(raw_root) / spec.hub_id

    def config_path(self, spec: SourceSpec, raw_root: Path, config: str) -> Path:
        return self.repo_dir(spec, raw_root) / self.config_dir.format(config=config)

    @staticmethod
    def _find(folder: Path, split: str) -> tuple[str, list[Path]] | None:
        for builder, patterns in (("parquet", _PARQUET_PATTERNS), ("json", _JSONL_PATTERNS)):
            files = sorted({p for pat in patterns for p in folder.glob(pat.format(split=split))})
            if files:
                return builder, files
        return None

    def local_files(self, spec: SourceSpec, raw_root: Path, config: str) -> tuple[str, list[Path]]:
        """(``datasets`` builder name, files in shard order) of one config's split."""
        folder = self.config_path(spec, raw_root, config)
        found = self._find(folder, spec.split) if folder.is_dir() else None
        if found is None:
            patterns = _PARQUET_PATTERNS + _JSONL_PATTERNS
            wanted = ", ".join(p.format(split=spec.split) for p in patterns)
            raise FileNotFoundError(f"{spec.name}: no raw files in {folder} (looked for {wanted})")
        builder, files = found
        other = "json" if builder == "parquet" else "parquet"
        other_patterns = _JSONL_PATTERNS if other == "json" else _PARQUET_PATTERNS
        if any(next(folder.glob(p.format(split=spec.split)), None) for p in other_patterns):
            raise ValueError(
                f"{spec.name}: {folder} holds both Parquet and JSONL {spec.split} files"
            )
        return builder, files

    def raw_files(self, spec: SourceSpec, raw_root: Path) -> list[Path]:
        return [
            path
            for config in self.config_names(spec, raw_root)
            for path in self.local_files(spec, raw_root, config)[1]
        ]

    def load(self, spec: SourceSpec, raw_root: Path | None, config: str):
        """A streaming ``datasets.IterableDataset`` of one config's split."""
        from datasets import load_dataset

        if raw_root is None:
            return load_dataset(
                spec.hub_id, config, split=spec.split, streaming=True, **spec.revision_option()
            )
        builder, files = self.local_files(spec, raw_root, config)
        data_files = {spec.split: [str(path) for path in files]}
        return load_dataset(builder, data_files=data_files, split=spec.split, streaming=True)

    def parts(self, spec: SourceSpec, raw_root: Path | None, batch_size: int) -> Iterator[RawPart]:
        for config in self.config_names(spec, raw_root):
            dataset = self.load(spec, raw_root, config)
            yield RawPart(config, iter_record_batches(dataset, batch_size))

    # -- writing (demo corpus, test fixtures) ----------------------------------------------

    def write_parts(
        self, spec: SourceSpec, raw_root: Path, parts: Mapping[str, Iterable[Record]]
    ) -> list[Path]:
        """Write each part as the Hub does: ``<config>/<split>-00000-of-00001.parquet``."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        written = []
        for config, records in parts.items():
            table = pa.Table.from_pylist(list(records))
            path = self.config_path(spec, raw_root, config) / f"{spec.split}-00000-of-00001.parquet"
            with atomic_file(path) as handle:
                pq.write_table(table, handle)
            written.append(path)
        return written
