"""Which published cleaned corpus a tokenized folder was made from, carried to the data card.

An adopted Hub corpus (``hf://datasets/<org>/<name>@<rev>/...`` or a Hub-cache snapshot folder)
is recorded, per cleaned file, in the tokenized root's ``.hrm-cleaned-provenance.json`` (a
file on disk, or an object beside the folders of a tokenized root in object storage, fetched
into its working copy with them): the dataset id and revision, with the file's size and
SHA-256. The folders' own files are left as
they are (their arrays and ``tokenizer_info.json`` are data_io's bytes; this record is ours, a
hidden file beside them that data_io's sampler, which takes folders as tasks, never reads).

A sampled folder's data card credits each corpus its tasks came from; the record's format and
its reading are a contract of adoption and sampling
(:mod:`hrm_assets.contracts.cleaned_provenance`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from hrm_assets.adoption.cleaned import AdoptedCorpus, provenance_of
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.storage import ObjectStore
from hrm_assets.contracts.cleaned_provenance import (
    PROVENANCE_FILE,
    RECORD_FORMAT,
    provenance_files,
    read_provenance,
)


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


def keep_provenance(tokenized: DataRoot, files: Mapping[str, Mapping[str, object]]) -> bool:
    """Record ``files`` (:func:`hub_files`) in the tokenized root, on disk or in object
    storage, keeping the entries of folders already recorded and no longer adopted (their
    folders may still be sampled). Writes only when something changed, in one atomic step (a
    renamed file; one PUT, which readers see whole or not at all); returns whether it wrote."""
    if not files:
        return False
    remote = tokenized.remote
    store = ObjectStore(remote) if remote is not None else None
    if store is not None:
        current = provenance_files(store.get_bytes(PROVENANCE_FILE))
    else:
        current = read_provenance(tokenized.local)
    merged = dict(sorted({**current, **{k: dict(v) for k, v in files.items()}}.items()))
    if merged == current:
        return False
    text = json.dumps({"format": RECORD_FORMAT, "files": merged}, sort_keys=True, indent=1)
    if store is not None:
        store.put_bytes(PROVENANCE_FILE, (text + "\n").encode("utf-8"))
        return True
    from hrm_assets.common.atomic import atomic_write_text

    tokenized.local.mkdir(parents=True, exist_ok=True)
    atomic_write_text(tokenized.local / PROVENANCE_FILE, text + "\n")
    return True
