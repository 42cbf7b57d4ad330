"""The cleaned build of one source: whether its files are current, cleaning it when they are
not, on disk or in object storage, and its build record.

The decision is the same on both kinds of root: the raw data's version and the source's code
version (the build's inputs) against the build record, and the files still as recorded (their
content version). On disk that is a ``tree_sha256`` of the files; in object storage it comes
from one listing, the objects' stored SHA-256 (HEADs) and the record (a small GET), never from
reading the data: the source is cleaned into a local staging folder and each changed file is
uploaded with one PUT, its SHA-256 stored with it. Either way only files this build wrote are
deleted when the source no longer writes them.

Plain data out (:class:`CleanedBuild`); the Dagster asset turns it into its record and check.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hrm_assets.cleaning.clean import ProgressLog, clean_source, source_code_version
from hrm_assets.cleaning.raw_versions import RawObservation, observe_raw
from hrm_assets.cleaning.source_files import files_of_source, listed_cleaned_files
from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.build_record import is_current, read_record, write_record
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.hashing import file_sha256, tree_sha256, value_sha256
from hrm_assets.common.layout import CleanedFile
from hrm_assets.common.storage import (
    ObjectInfo,
    ObjectRoot,
    ObjectStore,
    cache_root,
    remote_tree_sha256,
)

BUILD_RECORDS = ".hrm-build"  # hidden: the cleaned-file scan ignores it
# The record's key for the rows check of a root in object storage (its files are not read
# again to check an unchanged source).
ROWS_CHECK = "rows_valid"

Log = Callable[[str], None]
# The rows check of a source's files as plain JSON: {"passed", "figures", "problems"}.
RowsCheck = Callable[[list[CleanedFile]], dict[str, Any]]


@dataclass(frozen=True)
class CleanedBuild:
    """What building one source's cleaned files came to."""

    version: str  # the files' content version (tree_sha256 of their bytes)
    summary: dict[str, Any]  # the cleaning report of the run that wrote them (as recorded)
    raw_version: str
    rebuilt: bool
    local_root: Path  # where the files are on this machine (a remote root's working copy)
    files: list[CleanedFile]  # the source's files now
    # The rows check, when the build has it without reading the files (object storage);
    # None: check ``files``.
    rows_check: dict[str, Any] | None = None
    location: str | None = None  # the root's URL when it is in object storage


def build_cleaned(
    spec: SourceSpec, root: DataRoot, raw_path: Path | None, log: Log, rows_check: RowsCheck
) -> CleanedBuild:
    """Clean ``spec`` into ``root`` unless its files are current (module docstring).
    ``rows_check`` checks staged files before they are uploaded to object storage."""
    observation = observe_raw(spec, raw_path)
    inputs = value_sha256({"raw": observation.version, "code": source_code_version(spec)})
    if root.remote is not None:
        return _build_in_object_storage(
            spec, root.remote, raw_path, observation, inputs, log, rows_check
        )
    return _build_on_disk(spec, root.local, raw_path, observation, inputs, log)


def content_version(cleaned_root: Path, files: list[CleanedFile]) -> str:
    """The files' content version: ``tree_sha256`` of their bytes under ``cleaned_root``."""
    return tree_sha256(cleaned_root, [item.path for item in files])


def _clean(spec: SourceSpec, out_root: Path, raw_path: Path | None, log: Log):
    meter = ProgressLog(log, spec.name)
    report = clean_source(
        spec, out_root, raw_path, progress=meter.records, progress_bytes=meter.raw_bytes
    )
    log(report.summary())
    return report


def _build_on_disk(
    spec: SourceSpec,
    cleaned_root: Path,
    raw_path: Path | None,
    observation: RawObservation,
    inputs: str,
    log: Log,
) -> CleanedBuild:
    record_path = cleaned_root / BUILD_RECORDS / f"{spec.name}.json"
    before = files_of_source(spec, cleaned_root)
    record = read_record(record_path)
    unchanged = (
        observation.problem is None
        and bool(before)
        and is_current(record, inputs, content_version(cleaned_root, before))
    )
    if unchanged:
        log(f"raw data and code of {spec.name} unchanged: nothing rewritten")
        summary = record["report"]
    else:
        report = _clean(spec, cleaned_root, raw_path, log)
        for item in before:
            if item.relative not in report.files:
                log(f"removing {item.relative}: {spec.name} no longer writes it")
                item.path.unlink(missing_ok=True)
        summary = {**report.as_dict(), "speed": report.speed()}
    files = files_of_source(spec, cleaned_root)
    version = content_version(cleaned_root, files)
    if not unchanged:
        write_record(record_path, inputs, version, report=summary)
    return CleanedBuild(version, summary, observation.version, not unchanged, cleaned_root, files)


@dataclass(frozen=True)
class _Listing:
    """A cleaned root in object storage as one listing, the source's files at their place in
    the working copy."""

    store: ObjectStore
    local: Path
    files: list[CleanedFile]

    @classmethod
    def of(cls, root: ObjectRoot, spec: SourceSpec) -> _Listing:
        local = DataRoot(root).local
        store = ObjectStore(root)
        listed = listed_cleaned_files(root, local, store.list())
        return cls(store, local, files_of_source(spec, local, listed))

    def heads(self) -> dict[str, ObjectInfo]:
        """Each file's object with its stored SHA-256 (one HEAD each, several at once)."""
        found = self.store.head_many(item.relative for item in self.files)
        missing = [relative for relative, info in found.items() if info is None]
        if missing:
            raise FileNotFoundError(f"{self.store.root.join(missing[0])}: gone since it was listed")
        return found  # type: ignore[return-value]


def _build_in_object_storage(
    spec: SourceSpec,
    location: ObjectRoot,
    raw_path: Path | None,
    observation: RawObservation,
    inputs: str,
    log: Log,
    rows_check: RowsCheck,
) -> CleanedBuild:
    listing = _Listing.of(location, spec)
    store = listing.store
    record_key = f"{BUILD_RECORDS}/{spec.name}.json"
    before = listing.files
    heads = listing.heads()
    record = read_record_bytes(store.get_bytes(record_key))
    ours = all(info.sha256 for info in heads.values())
    unchanged = (
        observation.problem is None
        and bool(before)
        and ours
        and is_current(record, inputs, remote_tree_sha256(heads.values()))
        and isinstance(record.get(ROWS_CHECK), dict)
    )
    if unchanged:
        log(f"raw data and code of {spec.name} unchanged: nothing rewritten")
        summary, rows = record["report"], record[ROWS_CHECK]
        version = record["outputs"]
    else:
        cache_root().mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".tmp-cleaned-", dir=cache_root()) as staging:
            staging = Path(staging)
            report = _clean(spec, staging, raw_path, log)
            staged = files_of_source(spec, staging)
            rows = rows_check(staged)
            version = content_version(staging, staged)
            uploaded = _upload_changed(store, staged, heads)
            log(f"{uploaded} of {len(staged)} file(s) uploaded to {location}")
        for item in before:
            if item.relative not in report.files and heads[item.relative].sha256:
                # Only objects carrying our SHA-256 metadata: files this build wrote.
                log(f"removing {item.relative}: {spec.name} no longer writes it")
                store.delete([item.relative])
        summary = {**report.as_dict(), "speed": report.speed()}
        record_text = json.dumps(
            {"inputs": inputs, "outputs": version, "report": summary, ROWS_CHECK: rows},
            sort_keys=True,
            indent=1,
        )
        store.put_bytes(record_key, record_text.encode("utf-8"))
        listing = _Listing.of(location, spec)
    return CleanedBuild(
        version,
        summary,
        observation.version,
        not unchanged,
        listing.local,
        listing.files,
        rows_check=rows,
        location=str(location),
    )


def _upload_changed(
    store: ObjectStore, staged: list[CleanedFile], heads: dict[str, ObjectInfo]
) -> int:
    """Upload each staged file whose stored SHA-256 differs (or that is new); returns how many."""
    uploaded = 0
    for item in staged:
        digest = file_sha256(item.path)
        known = heads.get(item.relative)
        if known is None or known.sha256 != digest:
            store.put_file(item.relative, item.path, sha256=digest)
            uploaded += 1
    return uploaded


def read_record_bytes(data: bytes | None) -> dict | None:
    """A build record read from object storage (None when absent or not a JSON object)."""
    try:
        record = json.loads(data) if data is not None else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None
