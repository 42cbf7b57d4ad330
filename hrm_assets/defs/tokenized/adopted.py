"""A tokenized root written by data_io's binary, adopted (``python -m hrm_assets.adoption
--tokenized ROOT``): each of its folders whose partition is registered is hashed once, checked
(``hrm_assets.adoption.tokenized``) and recorded as that partition's materialization, with the
data version our step would give the file; the step then keeps it (``split_adopted_folders``).
The cleaned files are the adopted folders, the adopted ``s3://`` roots (their kept hashes: an
unchanged object is not read) or our own cleaned root (``hrm_assets.adoption.roots``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dagster as dg

from hrm_assets.adoption.roots import cleaned_content
from hrm_assets.adoption.tokenized import (
    adopt_folder,
    has_foreign_folders,
    is_foreign,
    tokenizer_info_problems,
)
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.contracts.cleaned_provenance import read_provenance
from hrm_assets.defs.common.keys import TOKENIZER_KEY, cleaned_key, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.assets import CODE_VERSION, tokenizer_setup
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.defs.tokenized.records import recorded_data_versions, version_tags
from hrm_assets.tokenization.versions import data_version

DATA_VERSION_TAG = "dagster/data_version"


@dataclass
class TokenizedAdoption:
    events: list[dg.AssetMaterialization] = field(default_factory=list)
    current: int = 0  # recorded already, with the version they would be given now
    refused: list[str] = field(default_factory=list)  # one line each


def adopt_tokenized(instance: dg.DagsterInstance, data_paths: DataPaths) -> TokenizedAdoption:
    """Records for the folders of the tokenized root that another tool wrote, for registered
    partitions, their cleaned files adopted folders, ``s3://`` roots or our cleaned root;
    nothing when the root holds no such folder, or when its ``tokenizer_info.json`` disagrees
    with the tokenizer in use (said in ``refused``)."""
    root = data_paths.tokenized_root
    outcome = TokenizedAdoption()
    if not has_foreign_folders(root):
        return outcome
    setup = tokenizer_setup(data_paths)
    expected = setup.framing.tokenizer_info(setup.given_path, setup.encoder().vocab_size)
    problems = tokenizer_info_problems(root, expected)
    if problems:
        outcome.refused = [f"nothing adopted: {problem}" for problem in problems]
        return outcome
    cleaned = cleaned_content(
        data_paths.adopted_cleaned_roots, data_paths.root, data_paths.cleaned_root
    )
    files = {item.safe_name: item for item in cleaned.files()}
    hub = read_provenance(root)  # the Hub corpus of each cleaned file, when adopted from one
    for name in SOURCES:
        key = tokenized_key(name)
        registered = instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[name].name)
        foreign = [
            files[partition]
            for partition in registered
            if partition in files and is_foreign(root / partition)
        ]
        if not foreign:
            continue
        recorded = recorded_data_versions(instance, key, [item.safe_name for item in foreign])
        tags = version_tags(instance, [cleaned_key(name), TOKENIZER_KEY], CODE_VERSION)
        for item in foreign:
            size, digest = cleaned.sha256(item)
            version = data_version(digest, setup)
            if recorded.get(item.safe_name) == version:
                outcome.current += 1
                continue
            folder = adopt_folder(root, item, size)
            if isinstance(folder, str):
                outcome.refused.append(folder)
                continue
            outcome.events.append(
                dg.AssetMaterialization(
                    asset_key=key,
                    partition=item.safe_name,
                    metadata={
                        "path": dg.MetadataValue.path(str(folder.folder)),
                        "adopted": True,
                        "dagster/row_count": folder.rows,
                        "tokens": folder.tokens,
                        "source_bytes": size,
                        "arrays": dg.MetadataValue.json(
                            {n: {"size": s, "sha256": d} for n, (s, d) in folder.arrays.items()}
                        ),
                        **hub_metadata(hub.get(item.safe_name)),
                    },
                    tags={**tags, DATA_VERSION_TAG: version},
                )
            )
    cleaned.save_memo()
    return outcome


def hub_metadata(entry: dict | None) -> dict[str, str]:
    """``hub_id`` and ``hub_revision`` of the cleaned corpus a folder's file came from."""
    if not entry:
        return {}
    return {"hub_id": str(entry["hub_id"]), "hub_revision": str(entry.get("revision") or "")}
