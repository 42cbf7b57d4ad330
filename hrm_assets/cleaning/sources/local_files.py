"""Raw files that data_io reads from its ``raw_data/`` folder: finding, streaming and writing them.

Some sources are not loaded from the Hub by data_io but from local files: ``FLAN/`` and
``SYNTH/`` (``hf download`` of a Hub repository), ``mathematics_dataset-v1.0/`` and ``amps/``
(unpacked archives). Our raw root holds the same layout, so ``<raw root>`` plays the part of
data_io's ``raw_data/``. This module has what their layouts share:

- :class:`LocalLayout`, the :class:`~hrm_assets.cleaning.sources.spec.RawLayout` of such a source: a
  subclass says which files make which part, how one file is read in batches of records and how
  demo records are written back;
- :func:`glob_files` and :func:`pathlib_glob_files`, Python's two globs (data_io calls both)
  in a reproducible order;
- streaming readers (:func:`parquet_record_batches`, :func:`tar_regular_files`, :func:`batched`)
  and atomic writers for demo corpora and test fixtures;
- :func:`safe_filename`, data_io's rule for per-task output names.

There is no Hub fallback: data_io needs these files on disk, and so do we (``raw_root=None``
is an error that says which folder to download).
"""

from __future__ import annotations

import glob
import io
import os
import string
import tarfile
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path

from hrm_assets.cleaning.sources.spec import RawPart, Record, SourceSpec
from hrm_assets.common.atomic import atomic_file

_SAFE_CHARS = frozenset(string.ascii_letters + string.digits + "_-. ")


def safe_filename(name: str) -> str:
    """data_io's ``safe_filename``: every character outside ASCII letters, digits and ``_-. ``
    (space included) becomes ``_``, one per code point."""
    return "".join(char if char in _SAFE_CHARS else "_" for char in name)


def glob_files(folder: Path, pattern: str) -> list[Path]:
    """Files under ``folder`` matching ``pattern`` as ``glob.glob(pattern, recursive=True)``
    matches them (names starting with ``.`` are not matched, ``**`` spans folders), sorted by
    relative path: data_io takes glob's directory order, which no file system fixes."""
    names = glob.glob(pattern, root_dir=folder, recursive=True)
    return [folder / name for name in sorted(names) if (folder / name).is_file()]


def pathlib_glob_files(folder: Path, pattern: str) -> list[Path]:
    """Files under ``folder`` matching ``pattern`` as ``Path.glob`` matches them (unlike
    ``glob.glob``, names starting with ``.`` match too), sorted by path: for the scripts that
    glob with pathlib."""
    return sorted(path for path in Path(folder).glob(pattern) if path.is_file())


def batched(items: Iterable, size: int) -> Iterator[list]:
    """``items`` in lists of at most ``size``."""
    if size < 1:
        raise ValueError("batch size must be at least 1")
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def parquet_record_batches(
    path: Path, batch_size: int, columns: Sequence[str] | None = None
) -> Iterator[list[dict]]:
    """The rows of a Parquet file as dicts, ``batch_size`` at a time, in file order.

    ``columns`` limits what is decoded (the other columns are never read); a missing column
    raises ``ValueError`` naming the file.
    """
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    if columns is not None:
        missing = [name for name in columns if name not in parquet.schema_arrow.names]
        if missing:
            raise ValueError(f"{path}: column(s) {missing} missing from the Parquet schema")
    for batch in parquet.iter_batches(batch_size=batch_size, columns=columns):
        yield batch.to_pylist()


def tar_regular_files(archive: Path) -> Iterator[tuple[str, tarfile.TarFile, tarfile.TarInfo]]:
    """``(member name, archive, member)`` for each regular file of a (compressed) tar archive,
    in archive order, reading it once from start to end (``r|*``: no seeking, no index held).
    A member's bytes are read with ``archive.extractfile(member)`` before the next is yielded."""
    with tarfile.open(archive, "r|*") as tar:
        for member in tar:
            if member.isfile():
                yield member.name, tar, member


def write_parquet_records(path: Path, records: Iterable[Mapping]) -> Path:
    """Write records as one Parquet file (schema inferred), atomically; returns ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([dict(record) for record in records])
    with atomic_file(path) as handle:
        pq.write_table(table, handle)
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns ``path``."""
    with atomic_file(path) as handle:
        handle.write(data)
    return path


def write_tar_gz(archive: Path, members: Iterable[tuple[str, bytes]]) -> Path:
    """A gzip-compressed tar of ``(name, data)`` regular files, in the given order, atomically."""
    with atomic_file(archive) as handle, tarfile.open(fileobj=handle, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0  # reproducible archives
            tar.addfile(info, io.BytesIO(data))
    return archive


class LocalLayout(ABC):
    """A source read from files under ``<raw root>/<folder>``, part by part and file by file.

    Subclasses set ``folder`` and ``pattern`` (for :meth:`describe`) and implement
    :meth:`part_files`, :meth:`read_batches` and :meth:`write_part`.
    """

    folder: str
    pattern: str
    download_hint: str = ""

    def root(self, spec: SourceSpec, raw_root: Path | None) -> Path:
        """``<raw root>/<folder>``; raises when there is no raw root or no such folder."""
        if raw_root is None:
            hint = f" ({self.download_hint})" if self.download_hint else ""
            raise ValueError(
                f"{spec.name}: data_io reads this source from local files, not the Hub; set a raw "
                f"root (HRM_RAW_ROOT) holding {self.folder}/{hint}"
            )
        folder = Path(raw_root) / self.folder
        if not folder.is_dir():
            raise FileNotFoundError(f"{spec.name}: raw folder {folder} does not exist")
        return folder

    @abstractmethod
    def part_files(self, spec: SourceSpec, root: Path) -> list[tuple[str, list[Path]]]:
        """``(part name, files)`` in data_io's order; the files of a part are read in turn."""

    @abstractmethod
    def read_batches(self, path: Path, part: str, batch_size: int) -> Iterator[list[Record]]:
        """The records of one raw file in order, at most ``batch_size`` per list."""

    @abstractmethod
    def write_part(self, root: Path, part: str, records: Iterable[Record]) -> list[Path]:
        """Lay out one part's records under ``root`` so that :meth:`part_files` finds them."""

    # -- RawLayout -------------------------------------------------------------------------

    def parts(self, spec: SourceSpec, raw_root: Path | None, batch_size: int) -> Iterator[RawPart]:
        root = self.root(spec, raw_root)
        found = self.part_files(spec, root)
        if not found:
            raise FileNotFoundError(f"{spec.name}: no raw files {self.pattern} in {root}")
        for name, files in found:
            yield RawPart(name, self._chain(files, name, batch_size))

    def _chain(self, files: list[Path], part: str, batch_size: int) -> Iterator[list[Record]]:
        for path in files:
            yield from self.read_batches(path, part, batch_size)

    def raw_files(self, spec: SourceSpec, raw_root: Path) -> list[Path]:
        root = self.root(spec, raw_root)
        return [path for _, files in self.part_files(spec, root) for path in files]

    def write_parts(
        self, spec: SourceSpec, raw_root: Path, parts: Mapping[str, Iterable[Record]]
    ) -> list[Path]:
        root = Path(raw_root) / self.folder
        return [
            path for part, records in parts.items() for path in self.write_part(root, part, records)
        ]

    def describe(self, spec: SourceSpec) -> str:
        return f"{self.folder}/{self.pattern}"


def relative_posix(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators (member-name style)."""
    return Path(os.path.relpath(path, root)).as_posix()
