"""Tokenized files: ``tokenized/<source>``, one dynamic partition per cleaned file.

Any set of partitions materializes in one run (``BackfillPolicy.single_run()``; or runs of at
most ``$HRM_TOKENIZE_FILES_PER_RUN`` files, to spread a backfill over Celery workers): a backfill
of all 2,000 FLAN files, a ``--partition-range`` from the CLI, or what automation requests. The
step hands every file to the Rust core at once (several files encoded together, one durable
sync per chunk) and records each partition on its own (``records.py``): a changed file gets a
materialization with its own data version and its checks; an unchanged one keeps its record.
A file that fails fails the run, named in the error, after every other file is recorded.
"""

import dataclasses
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import dagster as dg

from hrm_assets import _core
from hrm_assets.cleaning.sources import SOURCES, SourceSpec
from hrm_assets.common.layout import CleanedFile, LayoutError, is_hidden_name
from hrm_assets.common.object_mirror import mirror_tree
from hrm_assets.common.settings import TOKENIZER_INFO_FILE, TOKENIZER_JSON
from hrm_assets.common.storage import ObjectRoot
from hrm_assets.contracts.framing import Framing
from hrm_assets.defs.common.automation import freshness_policy, on_upstream_data_change
from hrm_assets.defs.common.executor import CELERY_QUEUE_TAG, GENERAL_QUEUE
from hrm_assets.defs.common.keys import TOKENIZED_PREFIX, TOKENIZER_KEY, cleaned_key, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.checks import (
    reused_remote_check_results,
    tokenized_check_results_many,
    tokenized_check_specs,
    tokenized_vocab_size,
)
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.defs.tokenized.records import (
    grouped_records,
    latest_materialization_targets,
    mark_failed,
    materialization,
    partition_evaluation,
    recorded_data_versions,
    version_tags,
)
from hrm_assets.tokenization.partitioning import partition_file
from hrm_assets.tokenization.remote import RemoteCleaned, RemoteTokenized, tokenize_remote
from hrm_assets.tokenization.tokenize import (
    TokenizeFailure,
    TokenizeOutcome,
    TokenizerSetup,
    check_roots_apart,
    expected_data_version,
    tokenize_files,
    write_tokenizer_info,
)

# The tokenized folders' format version (rust_tokenizer/src/tokenize/mod.rs): the one number
# that moves with what a folder holds (docs/ARCHITECTURE.md, "Code versions").
CODE_VERSION = _core.FORMAT_VERSION
FILES_PER_RUN_ENV = "HRM_TOKENIZE_FILES_PER_RUN"
PROGRESS_SECONDS = 10.0
EVALUATIONS_PER_LOOKUP = 256


class TokenizeConfig(dg.Config):
    threads: int | None = None


def tokenize_backfill_policy() -> dg.BackfillPolicy:
    """One run for any set of partitions, or runs of at most ``$HRM_TOKENIZE_FILES_PER_RUN``
    files (to spread a backfill over Celery workers)."""
    value = os.environ.get(FILES_PER_RUN_ENV)
    if not value:
        return dg.BackfillPolicy.single_run()
    try:
        per_run = int(value)
    except ValueError:
        per_run = 0
    if per_run < 1:
        raise ValueError(f"{FILES_PER_RUN_ENV}={value!r}: expected a positive number of files")
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=per_run)


def cleaned_files_for(
    spec: SourceSpec,
    cleaned_root: Path,
    partitions: Sequence[str],
    remote: RemoteCleaned | None = None,
) -> tuple[list[CleanedFile], list[TokenizeFailure]]:
    """The cleaned file of each partition, and a failure naming each partition whose file is
    missing or ambiguous (two paths mapping to its folder). With ``remote``, looked up in its
    listing instead of on disk."""
    found, missing = [], []
    where = remote.root if remote is not None else cleaned_root
    for key in partitions:
        try:
            if remote is not None:
                item = remote.partition_file(spec, key)
            else:
                item = partition_file(spec, cleaned_root, key)
        except LayoutError as error:
            missing.append(TokenizeFailure(key, error))
            continue
        if item is None:
            problem = (
                f"cleaned file for partition {key!r} of {spec.name} not found under "
                f"{where}; rematerialize cleaned/{spec.name}"
            )
            missing.append(TokenizeFailure(key, FileNotFoundError(problem)))
        else:
            found.append(item)
    return found, missing


def adopted_files_for(
    spec: SourceSpec, roots: Sequence[Path], partitions: Sequence[str]
) -> tuple[list[CleanedFile], list[TokenizeFailure]]:
    """:func:`cleaned_files_for` over adopted cleaned roots (``HRM_ADOPT_CLEANED``), read
    once for all the partitions; links to files (a Hub cache) are their files."""
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
    setup: TokenizerSetup,
) -> tuple[list[CleanedFile], int, list[TokenizeFailure]]:
    """(the files to tokenize, how many folders adopted from another tool are current, a
    failure for each such folder that is not). A folder hrm-data did not write is never
    rewritten: it is current when its record (``python -m hrm_assets.adoption --tokenized``)
    has the version this file and tokenizer give; otherwise its partition fails, saying so."""
    from hrm_assets.adoption.tokenized import is_foreign

    foreign = [item for item in files if is_foreign(tokenized_root / item.safe_name)]
    if not foreign:
        return files, 0, []
    recorded = recorded_data_versions(instance, asset_key, [item.safe_name for item in foreign])
    kept, refused = 0, []
    for item in foreign:
        if recorded.get(item.safe_name) == expected_data_version(item, setup):
            kept += 1
            continue
        problem = (
            f"{tokenized_root / item.safe_name} was written by another tool (data_io's "
            "tokenizer?) and hrm-data never modifies it; it is not adopted for this cleaned file "
            "and tokenizer (python -m hrm_assets.adoption --tokenized adopts a current one): "
            "move it away to have it tokenized"
        )
        refused.append(TokenizeFailure(item.safe_name, FileExistsError(problem)))
    chosen = {item.safe_name for item in foreign}
    return [item for item in files if item.safe_name not in chosen], kept, refused


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


def build_tokenized_asset(spec: SourceSpec) -> dg.AssetsDefinition:
    asset_key = tokenized_key(spec.name)
    deps = [cleaned_key(spec.name), TOKENIZER_KEY]

    @dg.multi_asset(
        name=f"tokenized_{spec.name}",
        specs=[
            dg.AssetSpec(
                asset_key,
                deps=deps,
                group_name=TOKENIZED_PREFIX,
                partitions_def=TOKENIZED_PARTITIONS[spec.name],
                kinds={"rust", "numpy"},
                description=f"data_io's token arrays of each cleaned file of {spec.name}",
                code_version=CODE_VERSION,
                automation_condition=on_upstream_data_change(),
                freshness_policy=freshness_policy("tokenized"),
                # Records are yielded per partition (records.py), never as the step's output.
                skippable=True,
            )
        ],
        check_specs=tokenized_check_specs(spec),
        can_subset=True,
        backfill_policy=tokenize_backfill_policy(),
        op_tags={CELERY_QUEUE_TAG: GENERAL_QUEUE},
    )
    def tokenized(
        context: dg.AssetExecutionContext, config: TokenizeConfig, data_paths: DataPaths
    ) -> Iterator[dg.AssetMaterialization | dg.AssetCheckEvaluation]:
        with grouped_records(context.instance):
            yield from tokenize_partitions(context, config, data_paths)

    def tokenize_partitions(
        context: dg.AssetExecutionContext, config: TokenizeConfig, data_paths: DataPaths
    ) -> Iterator[dg.AssetMaterialization | dg.AssetCheckEvaluation]:
        partitions = context.partition_keys
        tokenized_root = data_paths.tokenized_root
        remote = remote_roots(data_paths)
        adopted = data_paths.adopted_cleaned_roots
        if remote is None:
            if adopted:
                files, failures = adopted_files_for(spec, adopted, partitions)
            else:
                files, failures = cleaned_files_for(spec, data_paths.cleaned_root, partitions)
            setup = tokenizer_setup(data_paths)  # hashed once
            # Before anything is written: nested roots would put outputs among the cleaned
            # files.
            check_roots_apart(adopted or [data_paths.cleaned_root], tokenized_root)
            files, kept, refused = split_adopted_folders(
                context.instance, asset_key, files, tokenized_root, setup
            )
            failures += refused
            if not keeps_adopted_info(tokenized_root, setup):
                write_tokenizer_info(tokenized_root, setup)
            vocab_size = tokenized_vocab_size(tokenized_root)
            results = tokenize_files(files, tokenized_root, setup, threads=config.threads)
        else:
            kept = 0
            cleaned, out = remote
            files, failures = cleaned_files_for(spec, cleaned.local, partitions, cleaned)
            setup = tokenizer_setup(data_paths)
            vocab_size = out.write_tokenizer_info(setup)
            results = tokenize_remote(files, cleaned, out, setup, threads=config.threads)
        instance = context.instance
        recorded = recorded_data_versions(instance, asset_key, partitions)
        tags = version_tags(instance, deps, CODE_VERSION)
        unchanged: list[TokenizeOutcome] = []
        # Folders adopted from data_io, current: unchanged, never rewritten (adoption/).
        counts = {"tokenized": 0, "unchanged": kept, "recorded": 0, "failed checks": 0}
        context.log.info(f"{len(files):,} of {len(partitions):,} partitions have their file")

        # Check evaluations wait for a batch of partitions, whose targets (the latest
        # materializations) are then looked up at once.
        evaluations: list[tuple[str, list[dg.AssetCheckResult]]] = []

        def recorded_evaluations() -> Iterator[dg.AssetCheckEvaluation]:
            targets = latest_materialization_targets(
                instance, asset_key, [key for key, _ in evaluations]
            )
            for key, results in evaluations:
                for check in results:
                    yield partition_evaluation(check, asset_key, key, targets.get(key))
            evaluations.clear()

        def checked_records(
            outcomes: list[TokenizeOutcome],
        ) -> Iterator[dg.AssetMaterialization | dg.AssetCheckEvaluation]:
            """Both checks of every outcome, its folder's arrays read once for both and the
            local folders checked at once (``tokenized_check_results_many``); then its
            records."""
            local = [result.output_dir for result in outcomes if result.output_dir is not None]
            checked = iter(tokenized_check_results_many(tokenized_root, local, vocab_size))
            for result in outcomes:
                if result.output_dir is None:  # a remote folder reused from its manifest
                    checks = reused_remote_check_results(out.root.join(result.safe_name))
                else:
                    checks = next(checked)
                key = result.safe_name
                if recorded.get(key) == result.data_version:
                    unchanged.append(result)
                    # Its latest record holds passing checks; only a failure is news
                    # (recorded with both checks' figures, against that record).
                    to_record = checks if not all(check.passed for check in checks) else []
                else:
                    counts["recorded"] += 1
                    yield materialization(asset_key, result, tags)
                    to_record = checks
                counts["failed checks"] += sum(not check.passed for check in checks)
                if to_record:
                    evaluations.append((key, to_record))
                if len(evaluations) >= EVALUATIONS_PER_LOOKUP:
                    yield from recorded_evaluations()

        # Outcomes are checked in batches of that size too, each batch's arrays read at once.
        pending: list[TokenizeOutcome] = []
        last_log = time.monotonic()
        for done, result in enumerate(results, start=1):
            if time.monotonic() - last_log >= PROGRESS_SECONDS:
                last_log = time.monotonic()
                context.log.info(f"{done:,} of {len(files):,} files done")
            if isinstance(result, TokenizeFailure):
                failures.append(result)
                continue
            counts["unchanged" if result.skipped else "tokenized"] += 1
            pending.append(result)
            if len(pending) >= EVALUATIONS_PER_LOOKUP:
                yield from checked_records(pending)
                pending.clear()
        yield from checked_records(pending)
        yield from recorded_evaluations()

        if failures:
            # A failed run marks every partition it did not record as failed: record the
            # unchanged ones too, so that only the failing files show as failed.
            for result in unchanged:
                yield materialization(asset_key, result, tags)
            mark_failed(context, asset_key, [failure.safe_name for failure in failures])
            names = "\n".join(f"- {failure.safe_name}: {failure.message}" for failure in failures)
            raise dg.Failure(
                description=f"{len(failures)} of {len(partitions)} file(s) of {spec.name} "
                f"failed (the others are recorded):\n{names}",
                metadata={"failed": [failure.safe_name for failure in failures]},
            )
        if not counts["recorded"] and not counts["failed checks"] and unchanged:
            # Freshness counts records: one unchanged (and re-verified) file stands for the
            # whole batch, so a stable source does not look stale after a no-op rebuild.
            yield materialization(asset_key, unchanged[0], tags)
        context.log.info(
            f"{spec.name}: {counts['tokenized']:,} tokenized, {counts['unchanged']:,} unchanged; "
            f"{counts['recorded']:,} partition record(s) written"
        )

    return tokenized


def remote_roots(data_paths: DataPaths) -> tuple[RemoteCleaned, RemoteTokenized] | None:
    """The cleaned and tokenized roots in object storage, or None when both are local. One
    local and one remote is refused: the step reads one and writes the other by one protocol."""
    from hrm_assets.defs.cleaned.adopted import adopted_remote_roots

    adopted = adopted_remote_roots(data_paths)  # adopted s3:// roots, read in place
    if adopted is not None:
        return adopted
    cleaned, tokenized = data_paths.cleaned_location, data_paths.tokenized_location
    if isinstance(cleaned, ObjectRoot) and isinstance(tokenized, ObjectRoot):
        return RemoteCleaned.scan(cleaned), RemoteTokenized(tokenized)
    if isinstance(cleaned, ObjectRoot) or isinstance(tokenized, ObjectRoot):
        raise ValueError(
            f"cleaned root {cleaned} and tokenized root {tokenized}: put both on disk or both "
            "in object storage"
        )
    return None


def tokenizer_setup(data_paths: DataPaths) -> TokenizerSetup:
    """The tokenizer: its file, or when its root is remote its working copy (refreshed by
    ETag), recorded in ``tokenizer_info.json`` by its URL."""
    location = data_paths.tokenizer_location
    if not isinstance(location, ObjectRoot):
        return TokenizerSetup.load(data_paths.tokenizer_json, Framing())
    mirror_tree(location, select=lambda relative: relative == TOKENIZER_JSON)
    setup = TokenizerSetup.load(data_paths.tokenizer_json, Framing())
    return dataclasses.replace(setup, given_path=str(location.join(TOKENIZER_JSON)))


TOKENIZED_ASSETS = [build_tokenized_asset(spec) for spec in SOURCES.values()]
