"""Dagster's floor: what a build through Dagster costs when the step itself does nothing.

Two figures bound what any Dagster interface to the tokenizer can reach on the corpus shape
(``bench/corpus_shape.py`` measures both in the same run as everything else):

1. **A command.** ``dagster asset materialize -m bench.dagster_floor --select 'key:"floor/one"'
   --partition only``: the one-partition asset :data:`one`, whose step returns at once, in the
   project's instance (``dagster_home/dagster.yaml``), executed in the run's process. It is the
   interpreter, Dagster's CLI and storage imports, loading a code location, opening the
   instance and one run: the least a ``dagster asset materialize`` costs, so ten per-source
   commands cost at least ten times it.
2. **The records.** One run of :data:`records` over N partitions (one per cleaned file), whose
   step tokenizes and checks nothing but records each partition exactly as the tokenized step
   does for a new file (``hrm_assets.defs.tokenized.records``: one materialization with its own
   data version and two check evaluations that name it, the evaluations' targets looked up 256
   at a time, all in the instance storage's grouped commits), run in process as
   ``hrm-materialize-tokenized`` runs a source.

    python -m bench.dagster_floor --child records N   # DAGSTER_HOME set; prints JSON
"""

import hashlib
import json
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from hrm_assets.defs.tokenized.partition_range import range_tags
from hrm_assets.defs.tokenized.records import (
    grouped_records,
    latest_materialization_targets,
    materialization,
    partition_evaluation,
    version_tags,
)
from hrm_assets.tokenization.tokenize import TokenizeOutcome

FLOOR_PARTITIONS = dg.DynamicPartitionsDefinition(name="floor_files")
ONE_PARTITION = dg.StaticPartitionsDefinition(["only"])
RECORDS_KEY = dg.AssetKey(["floor", "records"])
CHECK_NAMES = ("arrays_consistent", "manifest_valid")
LOOKUP_BATCH = 256


@dg.asset(key=["floor", "one"], partitions_def=ONE_PARTITION)
def one() -> dg.MaterializeResult:
    return dg.MaterializeResult()


def _check_specs() -> list[dg.AssetCheckSpec]:
    with warnings.catch_warnings():  # partitioned checks are a preview, as in checks.py
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return [
            dg.AssetCheckSpec(
                name, asset=RECORDS_KEY, blocking=True, partitions_def=FLOOR_PARTITIONS
            )
            for name in CHECK_NAMES
        ]


def _outcome(key: str) -> TokenizeOutcome:
    """A new file's outcome with figures of a typical small FLAN task."""
    return TokenizeOutcome(
        safe_name=key,
        skipped=False,
        rows=500,
        tokens=40_000,
        bytes=50_000,
        data_version=hashlib.sha256(key.encode()).hexdigest(),
        output_dir=Path("/nonexistent/floor") / key,
    )


@dg.multi_asset(
    name="floor_records",
    specs=[dg.AssetSpec(RECORDS_KEY, partitions_def=FLOOR_PARTITIONS, skippable=True)],
    check_specs=_check_specs(),
    can_subset=True,
    backfill_policy=dg.BackfillPolicy.single_run(),
)
def records(
    context: dg.AssetExecutionContext,
) -> Iterator[dg.AssetMaterialization | dg.AssetCheckEvaluation]:
    instance = context.instance
    tags = version_tags(instance, [], "floor")
    with grouped_records(instance):
        keys = context.partition_keys  # a query per call
        pending: list[str] = []
        for index, key in enumerate(keys, start=1):
            outcome = _outcome(key)
            folder = outcome.output_dir  # no sidecars there: no contamination metadata
            yield materialization(RECORDS_KEY, outcome, tags, folder, folder)
            pending.append(key)
            if len(pending) == LOOKUP_BATCH or index == len(keys):
                targets = latest_materialization_targets(instance, RECORDS_KEY, pending)
                for done in pending:
                    for name in CHECK_NAMES:
                        check = dg.AssetCheckResult(check_name=name, passed=True)
                        yield partition_evaluation(check, RECORDS_KEY, done, targets.get(done))
                pending.clear()


defs = dg.Definitions(
    assets=[one, records],
    jobs=[dg.define_asset_job("floor_records_job", selection=[RECORDS_KEY])],
    # The cheapest executor: no step process (the project's runs of one step do the same).
    executor=dg.in_process_executor,
)


def record_partitions(count: int) -> dict:
    """One run recording ``count`` new partitions (registered first, not timed)."""
    keys = [f"file_{index:05d}.parquet" for index in range(count)]
    job = defs.resolve_job_def("floor_records_job")
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions(FLOOR_PARTITIONS.name, keys)
        started = time.perf_counter()
        result = job.execute_in_process(
            instance=instance,
            tags=range_tags(keys),
            run_config={"loggers": {"console": {"config": {"log_level": "ERROR"}}}},
        )
        seconds = time.perf_counter() - started
        recorded = instance.get_materialized_partitions(RECORDS_KEY)
    return {
        "partitions": count,
        "seconds": seconds,
        "ok": result.success,
        "recorded": len(recorded),
    }


if __name__ == "__main__":
    if sys.argv[1:3] != ["--child", "records"] or len(sys.argv) != 4:
        raise SystemExit("usage: python -m bench.dagster_floor --child records N")
    print(json.dumps(record_partitions(int(sys.argv[3]))))
