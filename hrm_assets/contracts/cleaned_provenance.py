"""The record of which published cleaned corpus each tokenized folder was made from.

Adoption writes it (``hrm_assets.adoption.provenance``) into the tokenized root as
``.hrm-cleaned-provenance.json``: per cleaned file, the Hub dataset id and revision with the
file's size and SHA-256. The sampler's data card reads it (:func:`credited_corpora`) and credits
each corpus its tasks came from, for the tasks whose folder was made from the recorded file: its
``metadata.json`` records the same SHA-256 (ours) or, for a folder data_io wrote, the same size.
A folder made from another file under the same name is not credited.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from hrm_assets.common.settings import METADATA_FILE

PROVENANCE_FILE = ".hrm-cleaned-provenance.json"
RECORD_FORMAT = "hrm-data-cleaned-provenance/1"


def read_provenance(tokenized_root: Path) -> dict[str, dict[str, object]]:
    """The recorded files of a tokenized root on disk, or of the working copy of one in object
    storage, where the record is fetched with the folders (empty when it has no record or an
    unreadable one: then nothing is credited)."""
    try:
        data = (Path(tokenized_root) / PROVENANCE_FILE).read_bytes()
    except OSError:
        return {}
    return provenance_files(data)


def provenance_files(data: bytes | None) -> dict[str, dict[str, object]]:
    """The recorded files of a record's bytes (empty for none or an unreadable one)."""
    try:
        value = json.loads(data) if data is not None else None
    except ValueError:
        return {}
    files = value.get("files") if isinstance(value, dict) else None
    return files if isinstance(files, dict) else {}


def _made_from(folder: Path, entry: Mapping[str, object]) -> bool:
    try:
        metadata = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(metadata, dict):
        return False
    if "source_sha256" in metadata:
        return metadata["source_sha256"] == entry.get("sha256")
    return metadata.get("source_size") == entry.get("size")


def credited_corpora(tokenized_root: Path, tasks: Iterable[str]) -> list[dict[str, object]]:
    """The cleaned corpora the sampled ``tasks`` of ``tokenized_root`` were made from:
    ``[{"hub_id", "revision", "tasks"}]`` sorted by id and revision (empty: none recorded)."""
    recorded = read_provenance(tokenized_root)
    counts: dict[tuple[str, str], int] = {}
    for task in tasks:
        entry = recorded.get(task)
        if entry is None or not _made_from(Path(tokenized_root) / task, entry):
            continue
        key = (str(entry["hub_id"]), str(entry.get("revision") or ""))
        counts[key] = counts.get(key, 0) + 1
    return [
        {"hub_id": hub_id, "revision": revision or None, "tasks": count}
        for (hub_id, revision), count in sorted(counts.items())
    ]
