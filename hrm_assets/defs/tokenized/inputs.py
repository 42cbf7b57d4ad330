"""What a tokenized run starts from: the roots (``DataPaths``), the partitions' own or adopted
cleaned files, and folders another tool wrote (adopted, never rewritten), turned into the
stage's build (``hrm_assets.tokenization.build``)."""

from collections.abc import Callable, Sequence
from pathlib import Path

import dagster as dg

from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.layout import CleanedFile, LayoutError, is_hidden_name
from hrm_assets.common.settings import TOKENIZER_INFO_FILE
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.records import recorded_data_versions
from hrm_assets.tokenization.build import (
    TokenizedBuild,
    build_in_object_storage,
    build_on_disk,
    build_on_disk_from_objects,
    cleaned_files_for,
    object_roots,
    tokenizer_setup,
)
from hrm_assets.tokenization.outcomes import TokenizeFailure
from hrm_assets.tokenization.output_folders import check_roots_apart
from hrm_assets.tokenization.remote import RemoteTokenized
from hrm_assets.tokenization.tokenizer_setup import TokenizerSetup
from hrm_assets.tokenization.versions import expected_data_version


def start_build(
    instance: dg.DagsterInstance,
    asset_key: dg.AssetKey,
    spec: SourceSpec,
    partitions: Sequence[str],
    data_paths: DataPaths,
    threads: int | None,
) -> TokenizedBuild:
    """The tokenized build of ``partitions``, on disk or in object storage as the roots are."""
    from hrm_assets.adoption.tokenized import version_of
    from hrm_assets.defs.cleaned.adopted import (
        adopted_folders_for_bucket,
        adopted_objects_to_tokenize,
    )

    setup = tokenizer_setup(DataRoot(data_paths.tokenizer_location))  # hashed once
    tokenized = DataRoot(data_paths.tokenized_location)
    objects = adopted_objects_to_tokenize(data_paths)
    adopted = objects if objects is not None else adopted_folders_for_bucket(data_paths)
    if adopted is not None and tokenized.remote is not None:
        remote = (adopted, RemoteTokenized(tokenized.remote))
        return build_in_object_storage(spec, partitions, remote, setup, threads)
    if objects is not None:
        files, failures = cleaned_files_for(spec, objects.local, partitions, objects)
        root = tokenized.local
        files, kept, refused = split_adopted_folders(
            instance, asset_key, files, root, version_of(objects, setup)
        )
        objects.save_memo()
        return build_on_disk_from_objects(
            files,
            failures + refused,
            objects,
            root,
            setup,
            threads,
            write_info=not keeps_adopted_info(root, setup),
            kept=kept,
        )
    remote_roots = object_roots(DataRoot(data_paths.cleaned_location), tokenized)
    if remote_roots is not None:
        return build_in_object_storage(spec, partitions, remote_roots, setup, threads)
    tokenized_root = data_paths.tokenized_root
    adopted = data_paths.adopted_cleaned_roots
    if adopted:
        files, failures = adopted_files_for(spec, adopted, partitions)
    else:
        files, failures = cleaned_files_for(spec, data_paths.cleaned_root, partitions)
    # Before anything is written: nested roots would put outputs among the cleaned files.
    check_roots_apart(adopted or [data_paths.cleaned_root], tokenized_root)
    files, kept, refused = split_adopted_folders(
        instance, asset_key, files, tokenized_root, lambda item: expected_data_version(item, setup)
    )
    return build_on_disk(
        files,
        failures + refused,
        tokenized_root,
        setup,
        threads,
        write_info=not keeps_adopted_info(tokenized_root, setup),
        kept=kept,
    )


def adopted_files_for(
    spec: SourceSpec, roots: Sequence[Path], partitions: Sequence[str]
) -> tuple[list[CleanedFile], list[TokenizeFailure]]:
    """:func:`~hrm_assets.tokenization.build.cleaned_files_for` over adopted cleaned roots
    (``HRM_ADOPT_CLEANED``), read once for all the partitions; links to files (a Hub cache)
    are their files."""
    from hrm_assets.adoption.cleaned import scan_adopted

    try:
        present = {item.safe_name: item for item in scan_adopted(roots).files}
    except LayoutError as error:
        return [], [TokenizeFailure(key, error) for key in partitions]
    found, missing = [], []
    for key in partitions:
        item = present.get(key)
        if item is None or not spec.writes(item.relative):
            where = ", ".join(str(root) for root in roots)
            problem = f"cleaned file for partition {key!r} of {spec.name} not found under {where}"
            missing.append(TokenizeFailure(key, FileNotFoundError(problem)))
        else:
            found.append(item)
    return found, missing


def split_adopted_folders(
    instance: dg.DagsterInstance,
    asset_key: dg.AssetKey,
    files: list[CleanedFile],
    tokenized_root: Path,
    version: Callable[[CleanedFile], str],
) -> tuple[list[CleanedFile], int, list[TokenizeFailure]]:
    """(the files to tokenize, how many folders adopted from another tool are current, a
    failure for each such folder that is not), decided by
    :func:`hrm_assets.adoption.tokenized.split_foreign_folders` from the partitions' records
    and ``version`` (the data version each cleaned file gives now)."""
    from hrm_assets.adoption.tokenized import is_foreign, split_foreign_folders

    foreign = [item.safe_name for item in files if is_foreign(tokenized_root / item.safe_name)]
    if not foreign:
        return files, 0, []
    recorded = recorded_data_versions(instance, asset_key, foreign)
    return split_foreign_folders(files, tokenized_root, recorded, version)


def keeps_adopted_info(tokenized_root: Path, setup: TokenizerSetup) -> bool:
    """Whether the root's ``tokenizer_info.json`` is another tool's that agrees with this
    tokenizer and framing (all but the ``tokenizer_path`` it recorded as typed), beside
    folders of that tool: kept as it is rather than rewritten."""
    from hrm_assets.adoption.tokenized import is_foreign, tokenizer_info_problems

    if not (tokenized_root / TOKENIZER_INFO_FILE).is_file():
        return False
    entries = (entry for entry in tokenized_root.iterdir() if not is_hidden_name(entry.name))
    if not any(is_foreign(entry) for entry in entries):
        return False
    expected = setup.framing.tokenizer_info(setup.given_path, setup.encoder().vocab_size)
    return not tokenizer_info_problems(tokenized_root, expected)
