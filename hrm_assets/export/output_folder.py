"""An export's output folder: built beside the old one, with a manifest, renamed into place.

The folder is staged under a ``.tmp-`` name (:func:`hrm_assets.common.atomic.atomic_directory`), its
files listed with their size and SHA-256 in ``manifest.json`` (the format of the tokenized
and sampled folders, so ``hrm-verify`` checks an export too), then renamed into place: a crash
leaves the old export or none, never a half-written one that looks complete. One writer at a
time holds the output's lock and removes what killed writers left. Like the sampler, an export
replaces only a folder it can prove it wrote (empty, or every file listed by its manifest);
anything else is named in an error and left alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from hrm_assets.common.atomic import (
    atomic_directory,
    exclusive_lock,
    lock_path_for,
    remove_leftovers,
)
from hrm_assets.common.atomic import atomic_write_bytes as _atomic_write_bytes
from hrm_assets.common.manifest import (
    KIND_FIELD,
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    kind_problem,
    manifest_bytes,
)
from hrm_assets.export.npy_stream import ManifestEntry
from hrm_assets.sampling.output_folder import output_target, unproven_paths


class ExportError(ValueError):
    """The export cannot be written where asked; the message names the path."""


def _overlaps(one: Path, other: Path) -> bool:
    return one == other or one.is_relative_to(other) or other.is_relative_to(one)


class StagedExport:
    """The staged folder and the manifest entries of what has been written into it."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.entries: dict[str, ManifestEntry] = {}

    def path(self, name: str) -> Path:
        return self.folder / name

    def add(self, name: str, entry: ManifestEntry) -> None:
        self.entries[name] = entry

    def write_bytes(self, name: str, data: bytes) -> None:
        _atomic_write_bytes(self.folder / name, data)
        self.entries[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


@contextlib.contextmanager
def export_folder(output: Path, inputs: list[Path], kind: str) -> Iterator[StagedExport]:
    """Yield a :class:`StagedExport`; when the block ends without error, write its
    ``manifest.json`` (recording ``kind``: ``megatron``, ``packed``) and rename it to ``output``
    (replacing an earlier export of that kind there).

    Raises :class:`ExportError` when ``output`` is, holds or lies inside one of ``inputs``,
    when another export is writing it, when it holds another kind's output (a sampled folder,
    another export), or files no manifest proves an export wrote (each named).
    """
    target = output_target(output)
    for source in inputs:
        source = Path(os.path.realpath(Path(source).absolute()))
        if _overlaps(target, source):
            raise ExportError(
                f"{output}: the output must not be, hold or lie inside the input {source}"
            )
    if target.exists() and not target.is_dir():
        raise ExportError(f"{output}: exists and is not a folder; left alone")
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(exclusive_lock(lock_path_for(target), wait=False))
        except BlockingIOError:
            raise ExportError(f"{output}: another export is writing it now") from None
        if target.is_dir():
            other_kind = kind_problem(target, kind, f"the {kind} export")
            if other_kind is not None:
                raise ExportError(other_kind)
            foreign = unproven_paths(target)
            if foreign:
                shown = ", ".join(str(path) for path in foreign[:5])
                more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
                raise ExportError(
                    f"{output}: holds files no export manifest lists ({shown}{more}); "
                    f"move them or choose another output folder"
                )
        remove_leftovers(target)
        with atomic_directory(target) as staged:
            export = StagedExport(staged)
            yield export
            manifest = {
                "files": dict(sorted(export.entries.items())),
                "format": MANIFEST_FORMAT,
                KIND_FIELD: kind,
            }
            _atomic_write_bytes(staged / MANIFEST_FILE, manifest_bytes(manifest))
