"""Where the Platypus sources' raw records live, and how they are streamed and written back.

data_io's ``pipe/clean_platypus/`` reads two sources from local files under ``raw_data/``
(our raw root) and four from the Hub:

- ARB: ``Platypus/ARB/<subject>.json`` (``hf download imone/ARB``), one JSON array per subject;
- scibench: ``Platypus/scibench/dataset/original/*.json`` (a clone of mandyyyyii/scibench),
  one JSON array per textbook;
- reclor: ``metaeval/reclor``, whose repository keeps ``train.json`` and ``val.json`` (JSON
  arrays, the ``validation`` split by the Hub's file-name rule) at its root;
- TheoremQA: ``TIGER-Lab/TheoremQA`` ``data/test-*.parquet``, whose ``Picture`` column is an
  image: it is read undecoded (``{"bytes", "path"}`` or null), since data_io only asks whether
  it is null and decoding would need Pillow for nothing.

The JSON arrays are streamed element by element (:func:`iter_json_array`), so memory holds one
record at a time, not a whole file as data_io's ``json.load`` does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hrm_assets.cleaning.sources.hub import HubLayout, iter_record_batches
from hrm_assets.cleaning.sources.hub_splits import SPLIT_SEPARATOR
from hrm_assets.cleaning.sources.local_files import LocalLayout, batched
from hrm_assets.cleaning.sources.spec import RawPart, Record, SourceSpec
from hrm_assets.common.atomic import atomic_file

_WHITESPACE = " \t\n\r"
_NUMBER_CHARS = frozenset("0123456789+-.eE")
JSON_CHUNK_CHARS = 1 << 16


class _JsonText:
    """A text file read in chunks, with a cursor; the consumed prefix is dropped on refill."""

    def __init__(self, handle, chunk_chars: int):
        self.handle, self.chunk_chars = handle, chunk_chars
        self.buffer, self.pos, self.eof, self.offset = "", 0, False, 0

    def refill(self) -> bool:
        chunk = self.handle.read(self.chunk_chars)
        self.offset += self.pos
        self.buffer, self.pos = self.buffer[self.pos :] + chunk, 0
        self.eof = not chunk
        return bool(chunk)

    def peek(self) -> str | None:
        """The next non-whitespace character (not consumed), or None at the end of the file."""
        while True:
            while self.pos < len(self.buffer) and self.buffer[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self.refill():
                return None

    def value(self, decoder: json.JSONDecoder) -> Any:
        """Decode the JSON value at the cursor, reading more text until it is complete."""
        while True:
            try:
                value, end = decoder.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError:
                if self.refill():
                    continue
                raise
            # A number may go on in the next chunk ("-1." + "5e3"): the decoder stops early.
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                tail = end
                while tail < len(self.buffer) and self.buffer[tail] in _NUMBER_CHARS:
                    tail += 1
                if tail == len(self.buffer) and not self.eof and self.refill():
                    continue
            self.pos = end
            return value


def iter_json_array(path: Path, chunk_chars: int = JSON_CHUNK_CHARS) -> Iterator[Any]:
    """The elements of the JSON array in ``path`` (UTF-8), one at a time, in order.

    Memory holds one element and one chunk of text. Raises ``ValueError`` naming the file when
    the text is not one JSON array (data_io's ``json.load`` fails on the same files, except that
    we notice only when the stream gets there: elements before the fault are yielded).
    """
    decoder = json.JSONDecoder()
    with open(path, encoding="utf-8") as handle:
        text = _JsonText(handle, chunk_chars)
        try:
            if text.peek() != "[":
                raise ValueError("expected a JSON array")
            text.pos += 1
            if text.peek() == "]":
                text.pos += 1
            else:
                while True:
                    if text.peek() is None:
                        raise ValueError("unexpected end of file")
                    yield text.value(decoder)
                    separator = text.peek()
                    text.pos += 1
                    if separator == "]":
                        break
                    if separator != ",":
                        raise ValueError(f"expected ',' or ']', got {separator!r}")
            if text.peek() is not None:
                raise ValueError("extra data after the JSON array")
        except (ValueError, json.JSONDecodeError) as error:
            where = text.offset + text.pos
            raise ValueError(f"{path}: not a JSON array ({error}) near character {where}") from None


def write_json_array(path: Path, records: Iterable[Any]) -> Path:
    """Write records as one JSON array (UTF-8, one element a line), atomically."""
    with atomic_file(path, "w") as handle:
        handle.write("[")
        for index, record in enumerate(records):
            handle.write(",\n" if index else "\n")
            handle.write(json.dumps(record, ensure_ascii=False))
        handle.write("\n]\n")
    return path


# -- local files: ARB and scibench ------------------------------------------------------------


@dataclass(frozen=True)
class JsonArrayFiles(LocalLayout):
    """JSON-array files under ``<raw root>/<folder>``, one part per file, named after it.

    ``files``: the names data_io opens, in its order (a missing one is an error, as in
    data_io); ``None``: every entry of the folder whose name ends with ``.json``, in sorted
    order (data_io takes ``os.listdir``'s order, which no file system fixes).
    """

    folder: str
    files: tuple[str, ...] | None = None
    download_hint: str = ""
    chunk_chars: int = JSON_CHUNK_CHARS

    @property
    def pattern(self) -> str:  # type: ignore[override]
        return "*.json" if self.files is None else "{" + ",".join(self.files) + "}"

    def part_files(self, spec: SourceSpec, root: Path) -> list[tuple[str, list[Path]]]:
        if self.files is None:
            names = sorted(
                name
                for name in os.listdir(root)
                if name.endswith(".json") and (root / name).is_file()
            )
        else:
            names = list(self.files)
            missing = [name for name in names if not (root / name).is_file()]
            if missing:
                raise FileNotFoundError(f"{spec.name}: raw file(s) {missing} missing in {root}")
        return [(name, [root / name]) for name in names]

    def read_batches(self, path: Path, part: str, batch_size: int) -> Iterator[list[Record]]:
        return batched(iter_json_array(path, self.chunk_chars), batch_size)

    def write_part(self, root: Path, part: str, records: Iterable[Record]) -> list[Path]:
        if not part.endswith(".json") or "/" in part:
            raise ValueError(f"part {part!r} is not a JSON file name")
        return [write_json_array(root / part, records)]


# -- Hub: repositories with one named data file per split (reclor) -----------------------------


@dataclass(frozen=True)
class HubSplitFiles:
    """The splits in ``spec.split`` (``train+validation``) of a Hub repository that keeps one
    JSON file per split at its root (``files``: split -> file name); one part per split.

    From the Hub: ``load_dataset(hub_id, split=split, streaming=True)``; from a mirror: the
    same file through ``datasets``' JSON builder, in streaming mode.
    """

    files: Mapping[str, str] = field(default_factory=dict)

    def split_names(self, spec: SourceSpec) -> list[str]:
        names = spec.split.split(SPLIT_SEPARATOR)
        unknown = [name for name in names if name not in self.files]
        if unknown:
            raise ValueError(f"{spec.name}: no file known for split(s) {unknown}")
        return names

    def file_of(self, spec: SourceSpec, raw_root: Path, split: str) -> Path:
        return Path(raw_root) / spec.hub_id / self.files[split]

    def describe(self, spec: SourceSpec) -> str:
        return " then ".join(f"{spec.hub_id}/{self.files[s]}" for s in self.split_names(spec))

    def parts(self, spec: SourceSpec, raw_root: Path | None, batch_size: int) -> Iterator[RawPart]:
        from datasets import load_dataset

        for split in self.split_names(spec):
            if raw_root is None:
                dataset = load_dataset(
                    spec.hub_id, split=split, streaming=True, **spec.revision_option()
                )
            else:
                path = self.file_of(spec, raw_root, split)
                if not path.is_file():
                    raise FileNotFoundError(f"{spec.name}: raw file {path} does not exist")
                dataset = load_dataset(
                    "json", data_files={split: [str(path)]}, split=split, streaming=True
                )
            yield RawPart(split, iter_record_batches(dataset, batch_size))

    def raw_files(self, spec: SourceSpec, raw_root: Path) -> list[Path]:
        return [self.file_of(spec, raw_root, split) for split in self.split_names(spec)]

    def write_parts(
        self, spec: SourceSpec, raw_root: Path, parts: Mapping[str, Iterable[Record]]
    ) -> list[Path]:
        known = self.split_names(spec)
        unknown = sorted(set(parts) - set(known))
        if unknown:
            raise ValueError(f"{spec.name}: parts {unknown} are not splits of {spec.split!r}")
        return [
            write_json_array(self.file_of(spec, raw_root, split), records)
            for split, records in parts.items()
        ]


# -- Hub: Parquet with image columns read undecoded (TheoremQA) ---------------------------------


@dataclass(frozen=True)
class UndecodedImagesHubLayout(HubLayout):
    """A :class:`HubLayout` whose ``image_columns`` are read as stored (``{"bytes", "path"}``
    dicts or None) instead of decoded into images."""

    image_columns: tuple[str, ...] = ()

    def load(self, spec: SourceSpec, raw_root: Path | None, config: str):
        from datasets import Image

        dataset = super().load(spec, raw_root, config)
        for column in self.image_columns:
            if dataset.features is not None and column in dataset.features:
                dataset = dataset.cast_column(column, Image(decode=False))
        return dataset

    def write_parts(
        self, spec: SourceSpec, raw_root: Path, parts: Mapping[str, Iterable[Record]]
    ) -> list[Path]:
        """As the Hub has them: image columns stored as images, with ``datasets`` features."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        from datasets import Features, Image

        # How ``datasets`` stores an ``Image`` column in Parquet.
        image_storage = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
        written = []
        for config, records in parts.items():
            rows = list(records)
            table = pa.Table.from_pylist(rows)
            features = Features.from_arrow_schema(table.schema)
            for column in self.image_columns:
                index = table.schema.get_field_index(column)
                values = pa.array([row.get(column) for row in rows], type=image_storage)
                table = table.set_column(index, column, values)
                features[column] = Image()
            metadata = {"huggingface": json.dumps({"info": {"features": features.to_dict()}})}
            table = table.replace_schema_metadata(metadata)
            path = self.config_path(spec, raw_root, config) / f"{spec.split}-00000-of-00001.parquet"
            with atomic_file(path) as handle:
                pq.write_table(table, handle)
            written.append(path)
        return written
