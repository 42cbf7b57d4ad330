"""Tokenized files: ``tokenized/<source>``, one dynamic partition per cleaned file.

Any set of partitions materializes in one run (``BackfillPolicy.single_run()``; or runs of at
most ``$HRM_TOKENIZE_FILES_PER_RUN`` files, to spread a backfill over Celery workers): a backfill
of all 2,000 FLAN files, a ``--partition-range`` from the CLI, or what automation requests. The
step hands every file to the Rust core at once (several files encoded together, one durable
sync per chunk; ``hrm_assets.tokenization.build``) and records each partition on its own
(``recording.py``): a changed file gets a materialization with its own data version and its
checks; an unchanged one keeps its record. A file that fails fails the run, named in the error,
after every other file is recorded.
"""

import os
from collections.abc import Iterator

import dagster as dg

from hrm_assets import _core
from hrm_assets.cleaning.sources import SOURCES, SourceSpec
from hrm_assets.common.data_root import DataRoot
from hrm_assets.defs.common.automation import freshness_policy, on_upstream_data_change
from hrm_assets.defs.common.executor import CELERY_QUEUE_TAG, GENERAL_QUEUE
from hrm_assets.defs.common.keys import TOKENIZED_PREFIX, TOKENIZER_KEY, cleaned_key, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.checks import tokenized_check_specs
from hrm_assets.defs.tokenized.inputs import start_build
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.defs.tokenized.recording import EVALUATIONS_PER_LOOKUP, PartitionRecorder
from hrm_assets.defs.tokenized.records import grouped_records, mark_failed
from hrm_assets.tokenization import build as tokenized_build
from hrm_assets.tokenization.tokenizer_setup import TokenizerSetup

# The tokenized folders' format version (rust_tokenizer/src/tokenize/mod.rs): the one number
# that moves with what a folder holds (docs/ARCHITECTURE.md, "Code versions").
CODE_VERSION = _core.FORMAT_VERSION
FILES_PER_RUN_ENV = "HRM_TOKENIZE_FILES_PER_RUN"


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
        build = start_build(
            context.instance, asset_key, spec, partitions, data_paths, config.threads
        )
        recorder = PartitionRecorder(context.instance, asset_key, partitions, deps, CODE_VERSION)
        context.log.info(f"{len(build.files):,} of {len(partitions):,} partitions have their file")

        def progress(done: int) -> None:
            context.log.info(f"{done:,} of {len(build.files):,} files done")

        for batch in build.batches(EVALUATIONS_PER_LOOKUP, progress):
            yield from recorder.record(build, batch)
        yield from recorder.flush()
        if build.failures:
            yield from recorder.record_unchanged(build)
            raise failed_files(context, asset_key, spec, partitions, build)
        yield from recorder.freshness_record(build)
        context.log.info(
            f"{spec.name}: {build.counts['tokenized']:,} tokenized, "
            f"{build.counts['unchanged']:,} unchanged; {recorder.records:,} partition "
            "record(s) written"
        )

    return tokenized


def failed_files(
    context: dg.AssetExecutionContext,
    asset_key: dg.AssetKey,
    spec: SourceSpec,
    partitions: list[str],
    build: tokenized_build.TokenizedBuild,
) -> dg.Failure:
    """The run's failure: every partition it did not record is marked failed, and the error
    names each failing file."""
    failures = build.failures
    mark_failed(context, asset_key, [failure.safe_name for failure in failures])
    names = "\n".join(f"- {failure.safe_name}: {failure.message}" for failure in failures)
    return dg.Failure(
        description=f"{len(failures)} of {len(partitions)} file(s) of {spec.name} "
        f"failed (the others are recorded):\n{names}",
        metadata={"failed": [failure.safe_name for failure in failures]},
    )


def tokenizer_setup(data_paths: DataPaths) -> TokenizerSetup:
    """The tokenizer of these paths (:func:`hrm_assets.tokenization.build.tokenizer_setup`)."""
    return tokenized_build.tokenizer_setup(DataRoot(data_paths.tokenizer_location))


TOKENIZED_ASSETS = [build_tokenized_asset(spec) for spec in SOURCES.values()]
