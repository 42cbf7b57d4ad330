"""Data versions of raw sources: a content hash of local files, or the Hub revision."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.hashing import tree_sha256


@dataclass(frozen=True)
class RawObservation:
    version: str
    where: str
    files: int = 0
    bytes: int = 0
    problem: str | None = None  # set when the version could not be determined


def observe_local(spec: SourceSpec, raw_root: Path) -> RawObservation:
    """Hash over sorted relative names, sizes and contents of the files the source reads."""
    try:
        files = sorted(spec.layout.raw_files(spec, raw_root))
    except (FileNotFoundError, ValueError) as exc:
        return RawObservation("missing", str(raw_root), problem=str(exc))
    return RawObservation(
        version=tree_sha256(raw_root, files),
        where=str(raw_root),
        files=len(files),
        bytes=sum(path.stat().st_size for path in files),
    )


def observe_hub(spec: SourceSpec, timeout: float = 10.0) -> RawObservation:
    """The dataset repository's current revision; an unreachable Hub is reported, not raised."""
    if spec.hub_id is None:
        return RawObservation("unknown", "(no Hub id)", problem="source has no Hub dataset id")
    try:
        from huggingface_hub import HfApi

        info = HfApi().dataset_info(spec.hub_id, timeout=timeout, **spec.revision_option())
    except Exception as exc:  # noqa: BLE001 - any failure to reach the Hub is only reported
        return RawObservation(
            "unreachable", f"hub:{spec.hub_id}", problem=f"{type(exc).__name__}: {exc}"
        )
    return RawObservation(version=f"hub:{info.sha}", where=f"hub:{spec.hub_id}")


def observe_raw(spec: SourceSpec, raw_root: Path | None) -> RawObservation:
    own_root = getattr(spec.layout, "own_root", None)
    if own_root is not None:  # a layout that reads its own folder (a declared local source)
        return observe_local(spec, own_root)
    return observe_local(spec, raw_root) if raw_root is not None else observe_hub(spec)
