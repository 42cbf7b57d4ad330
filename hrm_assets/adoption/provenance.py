"""Which published cleaned corpus a tokenized folder was made from, carried to the data card.

An adopted Hub corpus (``hf://datasets/<org>/<name>@<rev>/...`` or a Hub-cache snapshot folder)
is recorded, per cleaned file, in the tokenized root's ``.hrm-cleaned-provenance.json``: the
dataset id and revision, with the file's size and SHA-256. The folders' own files are left as
they are (their arrays and ``tokenizer_info.json`` are data_io's bytes; this record is ours, a
hidden file beside them that data_io's sampler, which takes folders as tasks, never reads).

A sampled folder's data card credits each corpus its tasks came from
(:func:`credited_corpora`), for the tasks whose folder was made from the recorded file: its
``metadata.json`` records the same SHA-256 (ours) or, for a folder data_io wrote, the same size.
A folder made from another file under the same name is not credited.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from hrm_assets.adoption.cleaned import AdoptedCorpus, provenance_of

PROVENANCE_FILE = ".hrm-cleaned-provenance.json"
RECORD_FORMAT = "hrm-data-cleaned-provenance/1"


def hub_files(corpus: AdoptedCorpus) -> dict[str, dict[str, object]]:
    """Per tokenized folder name, the Hub corpus of an adopted file and the file's size and
    SHA-256; files of roots that are not Hub snapshots are left out."""
    found: dict[str, dict[str, object]] = {}
    for source in corpus.sources.values():
        for item, (_, size, digest) in zip(source.files, source.entries, strict=True):
            origin = provenance_of(item.root) if not getattr(item, "url", "") else None
            if origin is None or origin.hub_id is None:
                continue
            found[item.safe_name] = {
                "hub_id": origin.hub_id,
                "revision": origin.revision,
                "size": size,
                "sha256": digest,
            }
    return dict(sorted(found.items()))


def read_provenance(tokenized_root: Path) -> dict[str, dict[str, object]]:
    """The recorded files of a tokenized root (empty when it has no record or an unreadable
    one: then nothing is credited)."""
    try:
        value = json.loads((Path(tokenized_root) / PROVENANCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = value.get("files") if isinstance(value, dict) else None
    return files if isinstance(files, dict) else {}


def keep_provenance(tokenized_root: Path, files: Mapping[str, Mapping[str, object]]) -> bool:
    """Record ``files`` (:func:`hub_files`) in the tokenized root, keeping the entries of
    folders already recorded and no longer adopted (their folders may still be sampled).
    Writes only when something changed; returns whether it wrote."""
    from hrm_assets.common.atomic import atomic_write_text

    current = read_provenance(tokenized_root)
    merged = dict(sorted({**current, **{k: dict(v) for k, v in files.items()}}.items()))
    if merged == current:
        return False
    Path(tokenized_root).mkdir(parents=True, exist_ok=True)
    text = json.dumps({"format": RECORD_FORMAT, "files": merged}, sort_keys=True, indent=1)
    atomic_write_text(Path(tokenized_root) / PROVENANCE_FILE, text + "\n")
    return True


def _made_from(folder: Path, entry: Mapping[str, object]) -> bool:
    try:
        metadata = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
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
