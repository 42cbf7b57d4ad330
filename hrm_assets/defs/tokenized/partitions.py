"""One dynamic partition per cleaned file, per source; keys are tokenized folder names."""

from pathlib import Path

import dagster as dg

from hrm_assets.cleaning.sources import SOURCES, SourceSpec
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.layout import CleanedFile
from hrm_assets.common.storage import Location
from hrm_assets.tokenization.build import remove_owned_folder
from hrm_assets.tokenization.partitioning import files_of_source, partition_changes

TOKENIZED_PARTITIONS: dict[str, dg.DynamicPartitionsDefinition] = {
    name: dg.DynamicPartitionsDefinition(name=f"tokenized_{name}") for name in SOURCES
}


def partition_requests(
    instance: dg.DagsterInstance,
    spec: SourceSpec,
    cleaned_root: Path,
    scanned: list[CleanedFile] | None = None,
) -> tuple[list[str], list[str]]:
    """(keys to add, keys to delete) for ``tokenized/<spec.name>`` given the files on disk."""
    partitions_def = TOKENIZED_PARTITIONS[spec.name]
    present = [item.safe_name for item in files_of_source(spec, cleaned_root, scanned)]
    registered = instance.get_dynamic_partitions(partitions_def.name)
    return partition_changes(registered, present)


def sync_partitions(
    instance: dg.DagsterInstance,
    spec: SourceSpec,
    cleaned_root: Path,
    tokenized_root: Location,
    scanned: list[CleanedFile] | None = None,
) -> tuple[list[str], list[str]]:
    """Register new files as partitions; delete gone ones and their (owned) tokenized folders
    (on disk or in object storage)."""
    name = TOKENIZED_PARTITIONS[spec.name].name
    added, removed = partition_requests(instance, spec, cleaned_root, scanned)
    if added:
        instance.add_dynamic_partitions(name, added)
    for key in removed:
        instance.delete_dynamic_partition(name, key)
        remove_owned_output_at(tokenized_root, key)
    return added, removed


def remove_owned_output_at(tokenized_root: Location, key: str) -> bool:
    """Delete the tokenized folder ``key`` if this project wrote it, wherever the root is
    (:func:`hrm_assets.tokenization.build.remove_owned_folder`)."""
    return remove_owned_folder(DataRoot(tokenized_root), key)
