"""``hrm-materialize-tokenized``: every registered partition of the tokenized assets, one
process, one run per source.

    hrm-materialize-tokenized                  # every source with registered files
    hrm-materialize-tokenized flan tasksource  # those sources only

Each source is the run ``dagster asset materialize --select 'key:"tokenized/<source>"'
--partition-range FIRST...LAST`` makes (its ``tokenize_<source>`` job over the range of all
its partitions, recorded in ``$DAGSTER_HOME`` like any run), executed in this process: the
imports, the definitions and the instance are loaded once for all sources instead of once a
command (about 3 s each, most of a no-op rebuild of a one-file source).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

import dagster as dg

from hrm_assets.defs.tokenized.partition_range import range_tags, source_of
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

# The runs' events stay in the instance (the UI shows them); the console gets errors and the
# line per source this command prints.
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


def written_partitions(result: dg.ExecuteInProcessResult) -> set[str]:
    """The partitions a tokenized run wrote anew: its records whose folder was not kept as it
    was (``skipped`` false). An unchanged file keeps its folder and, mostly, its record."""
    written = set()
    for event in result.get_asset_materialization_events():
        materialization = event.materialization
        skipped = materialization.metadata.get("skipped")
        if materialization.partition is not None and skipped is not None and not skipped.value:
            written.add(materialization.partition)
    return written


def materialize_sources(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    sources: Sequence[str],
    log: Callable[[str], object] = print,
) -> list[str]:
    """One run over all registered partitions of each source's tokenized asset, in order;
    sources without partitions are skipped (said in ``log``). Returns the sources whose run
    failed (the others still ran)."""
    failed = []
    for source in sources:
        keys = instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[source].name)
        if not keys:
            log(f"tokenized/{source}: no registered files, nothing to do")
            continue
        started = time.monotonic()
        result = defs.resolve_job_def(f"tokenize_{source}").execute_in_process(
            instance=instance, tags=range_tags(keys), run_config=QUIET_CONSOLE, raise_on_error=False
        )
        outcome = "done" if result.success else "FAILED"
        tokenized = written_partitions(result)
        others = "unchanged" if result.success else "unchanged or not reached"
        log(
            f"tokenized/{source}: {len(keys):,} partition(s) {outcome} in "
            f"{time.monotonic() - started:.1f} s (run {result.run_id}): {len(tokenized):,} "
            f"tokenized, {len(keys) - len(tokenized):,} {others}"
        )
        if not result.success:
            failed.append(source)
    return failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hrm-materialize-tokenized",
        description="Materialize every registered partition of the tokenized assets: one run "
        "per source, all in this process (DAGSTER_HOME's instance).",
    )
    parser.add_argument("sources", nargs="*", help="sources (default: all), or tokenized/<name>")
    args = parser.parse_args(argv)
    try:
        sources = [source_of(name) for name in args.sources] or sorted(TOKENIZED_PARTITIONS)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from hrm_assets.definitions import defs

    with dg.DagsterInstance.get() as instance:
        failed = materialize_sources(defs, instance, sources)
    if failed:
        names = ", ".join(f"tokenized/{name}" for name in failed)
        print(f"error: failed: {names}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
