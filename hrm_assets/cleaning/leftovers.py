"""What killed cleaning runs of a source left in the cleaned root, found by name.

A cleaning run writes each output through a temporary sibling (``atomic.atomic_file``:
``.tmp-<file name>.<12 hex digits>``; Parquet spill files the same way) and holds the source's
cleaning lock (:func:`cleaning_lock_path`) throughout, so the next holder of that lock knows
every such sibling of the source's own outputs belongs to a run that died. Only names of this
project's own pattern whose output is one of the source's files are taken: a user's
``.tmp-notes`` in the cleaned root, and other sources' temporaries, stay.
"""

from __future__ import annotations

from pathlib import Path

from hrm_assets.cleaning.sources.spec import SourceSpec
from hrm_assets.common.atomic import TMP_PREFIX, is_own_temporary


def cleaning_lock_path(out_root: Path, spec: SourceSpec) -> Path:
    """The lock every cleaning run of ``spec`` into ``out_root`` holds (hidden: never data)."""
    return Path(out_root) / f".{spec.name}.cleaning.lock"


def _output_named_by(temporary: str) -> str:
    """``.tmp-<output>.<suffix>`` -> ``<output>`` (the suffix is the part after the last dot)."""
    return temporary[len(TMP_PREFIX) :].rsplit(".", 1)[0]


def _folders_of(spec: SourceSpec, out_root: Path) -> list[Path]:
    folders = {(out_root / relative).parent for relative in spec.static_outputs}
    if spec.route is not None and not spec.route_outputs:
        routed = out_root / spec.output.rstrip("/")
        folders.add(routed.parent)
        if routed.is_dir():
            folders.update(path for path in routed.rglob("*") if path.is_dir())
            folders.add(routed)
    return sorted(folder for folder in folders if folder.is_dir())


def cleaning_leftovers(spec: SourceSpec, out_root: Path) -> list[Path]:
    """The temporary files of ``spec``'s outputs under ``out_root`` (sorted). Remove them
    only while holding :func:`cleaning_lock_path`."""
    out_root = Path(out_root)
    found = []
    for folder in _folders_of(spec, out_root):
        for entry in folder.iterdir():
            if not is_own_temporary(entry.name) or entry.is_dir():
                continue
            relative = (folder / _output_named_by(entry.name)).relative_to(out_root).as_posix()
            if spec.writes(relative):
                found.append(entry)
    return sorted(found)
