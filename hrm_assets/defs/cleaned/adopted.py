"""Cleaned assets of adopted roots (``HRM_ADOPT_CLEANED``): recorded from the files as they
are, never cleaned or written (``hrm_assets.adoption.cleaned`` finds and hashes them).

``cleaned_files_sensor`` records each source whose adopted files changed (a materialization
with the files' content version, without a run) and registers a tokenized partition per file;
declarative automation then tokenizes the new and changed files. A cleaned asset run by hand
in this mode records the same, with its ``rows_valid`` check, instead of cleaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from hrm_assets.adoption.cleaned import (
    AdoptedCorpus,
    AdoptedFolders,
    SourceFiles,
    file_records,
)
from hrm_assets.adoption.objects import AdoptedObjects
from hrm_assets.adoption.provenance import hub_files, keep_provenance
from hrm_assets.adoption.roots import adopted_roots, read_corpus
from hrm_assets.cleaning.sources import SOURCES, SourceSpec
from hrm_assets.common.data_root import DataRoot
from hrm_assets.defs.cleaned.checks import rows_valid_result
from hrm_assets.defs.common.keys import cleaned_key
from hrm_assets.defs.common.metadata import table
from hrm_assets.defs.common.resources import DataPaths, local_path
from hrm_assets.defs.tokenizer.assets import adopted_tokenizer_record

DATA_VERSION_TAG = "dagster/data_version"


def adopted(data_paths: DataPaths) -> AdoptedFolders | AdoptedObjects | None:
    """The adopted roots listed now, with the hashes kept from earlier looks (None: the
    cleaned root is ours)."""
    return adopted_roots(data_paths.adopted_cleaned_roots, data_paths.root)


def local_adopted_root(data_paths: DataPaths) -> Path:
    """The first adopted root as a path (an object root's working-copy path): what partition
    lookups given the scanned files take as their root."""
    return local_path(data_paths.adopted_cleaned_roots[0])


def read_adopted(
    data_paths: DataPaths,
) -> tuple[AdoptedFolders | AdoptedObjects, AdoptedCorpus]:
    """The adopted roots read now, their files hashed where they changed; the Hub corpus of
    each file recorded beside the tokenized folders (on disk or in the bucket), for the data
    cards of the epochs sampled from them."""
    roots = adopted(data_paths)
    assert roots is not None, "read_adopted is called with adopted roots"
    corpus = read_corpus(roots, SOURCES.values())
    keep_provenance(DataRoot(data_paths.tokenized_location), hub_files(corpus))
    return roots, corpus


def adopted_objects_to_tokenize(data_paths: DataPaths) -> AdoptedObjects | None:
    """The adopted object roots, listed now, for the tokenized step (the Rust core reads each
    object where it is, into a tokenized root on disk or in object storage), or None when the
    adopted roots are folders or there are none."""
    roots = adopted(data_paths)
    return roots if isinstance(roots, AdoptedObjects) else None


def adopted_folders_for_bucket(data_paths: DataPaths) -> AdoptedFolders | None:
    """The adopted folders, for a tokenized root in object storage (the Rust core reads each
    file from disk and publishes its folder in the bucket), or None: no adopted folders, or a
    tokenized root on disk (where the step on disk tokenizes them)."""
    if DataRoot(data_paths.tokenized_location).remote is None:
        return None
    roots = adopted(data_paths)
    return roots if isinstance(roots, AdoptedFolders) else None


def adopted_metadata(source: SourceFiles, corpus: AdoptedCorpus) -> dict:
    """What the UI shows of an adopted source: its files, version and where they come from."""
    hub = [p for p in corpus.provenance if p.hub_id]
    metadata = {
        "adopted": True,
        "content_sha256": source.version,
        "file_count": len(source.files),
        "files": table(file_records(source), ["file", "relative", "bytes", "sha256"]),
        "provenance": dg.MetadataValue.json([p.as_dict() for p in corpus.provenance]),
    }
    if hub:
        metadata["hub_id"] = ", ".join(sorted({p.hub_id for p in hub if p.hub_id}))
        metadata["hub_revision"] = ", ".join(sorted({p.revision for p in hub if p.revision}))
    return metadata


def adopted_materialization(source: SourceFiles, corpus: AdoptedCorpus) -> dg.AssetMaterialization:
    """The record of an adopted source, with its files' content version as data version."""
    return dg.AssetMaterialization(
        asset_key=cleaned_key(source.name),
        metadata=adopted_metadata(source, corpus),
        tags={DATA_VERSION_TAG: source.version},
    )


def recorded_cleaned_versions(instance: dg.DagsterInstance) -> dict[str, str | None]:
    """The data version each cleaned asset last recorded (None: never materialized)."""
    keys = [cleaned_key(name) for name in SOURCES]
    latest = instance.get_latest_materialization_events(keys)
    found: dict[str, str | None] = {}
    for name, key in zip(SOURCES, keys, strict=True):
        event = latest.get(key)
        materialization = event.asset_materialization if event is not None else None
        found[name] = materialization.tags.get(DATA_VERSION_TAG) if materialization else None
    return found


def changed_sources(
    instance: dg.DagsterInstance, corpus: AdoptedCorpus
) -> list[dg.AssetMaterialization]:
    """A record for each source whose adopted files differ from what was last recorded."""
    recorded = recorded_cleaned_versions(instance)
    return [
        adopted_materialization(source, corpus)
        for name, source in corpus.sources.items()
        if recorded.get(name) != source.version
    ]


def record_adopted_source(
    context: dg.AssetExecutionContext, spec: SourceSpec, data_paths: DataPaths
) -> dg.MaterializeResult:
    """The cleaned asset's run in adoption mode: the files recorded and checked, none written."""
    from hrm_assets.defs.tokenized.partitions import sync_partitions

    roots, corpus = read_adopted(data_paths)
    source = corpus.sources[spec.name]
    with roots.read_locally(source.files) as readable:  # objects: a temporary copy
        rows_valid = rows_valid_result(readable)
    context.log.info(
        f"{spec.name}: {len(source.files)} adopted file(s) recorded as they are (not cleaned)"
    )
    warning = corpus.unknown_warning()
    if warning:
        context.log.warning(warning)
    added, removed = sync_partitions(
        context.instance,
        spec,
        local_adopted_root(data_paths),
        data_paths.tokenized_location,
        source.files,
    )
    if added or removed:
        context.log.info(f"tokenized partitions: +{len(added)} -{len(removed)}")
    return dg.MaterializeResult(
        data_version=dg.DataVersion(source.version),
        metadata=adopted_metadata(source, corpus),
        check_results=[rows_valid],
    )


@dataclass
class AdoptionPlan:
    """What one look at the adopted roots changes: the records to write (changed sources, an
    adopted tokenizer) and the tokenized partitions to add and remove, per source."""

    corpus: AdoptedCorpus
    events: list[dg.AssetMaterialization]
    partitions: dict[str, tuple[list[str], list[str]]]

    def summary(self) -> str:
        changes = [
            f"{name}: +{len(added)} -{len(removed)}"
            for name, (added, removed) in self.partitions.items()
            if added or removed
        ]
        recorded = ", ".join(event.asset_key.to_user_string() for event in self.events)
        return (
            f"{len(self.corpus.files())} adopted cleaned file(s); "
            + ("; ".join(changes) if changes else "no partition change")
            + (f"; recorded {recorded}" if self.events else "; nothing new to record")
        )

    def warnings(self) -> list[str]:
        found = []
        unknown = self.corpus.unknown_warning()
        if unknown:
            found.append(unknown)
        links = self.corpus.links_skipped
        if links:
            names = ", ".join(str(path) for path in links[:5])
            found.append(
                f"{len(links)} folder link(s) or dangling link(s) in the adopted roots not "
                f"followed: {names}"
            )
        return found


def plan_adoption(instance: dg.DagsterInstance, data_paths: DataPaths) -> AdoptionPlan:
    """Read the adopted roots and compare them with what ``instance`` recorded."""
    from hrm_assets.defs.tokenized.partitions import partition_requests

    corpus = read_adopted(data_paths)[1]
    events = changed_sources(instance, corpus)
    tokenizer = adopted_tokenizer_record(instance, data_paths)
    if tokenizer is not None:
        events.append(tokenizer)
    root = local_adopted_root(data_paths)
    partitions = {
        name: partition_requests(instance, spec, root, corpus.sources[name].files)
        for name, spec in SOURCES.items()
    }
    return AdoptionPlan(corpus=corpus, events=events, partitions=partitions)
