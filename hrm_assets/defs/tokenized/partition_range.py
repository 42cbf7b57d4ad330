"""``FIRST...LAST`` of a tokenized asset's registered partitions, for the Dagster CLI.

    dagster asset materialize -m hrm_assets.definitions --select 'key:"tokenized/flan"' \\
        --partition-range "$(hrm-partition-range tokenized/flan)"

materializes every file of FLAN in one run. Dynamic partitions are ordered as they were
registered, so the range of all of them runs from the first registered to the last.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import dagster as dg

from hrm_assets.defs.common.keys import TOKENIZED_PREFIX
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def source_of(asset: str) -> str:
    """The source a tokenized asset key (``tokenized/flan``, or ``flan``) names; ValueError
    for an unknown one."""
    source = asset.removeprefix(f"{TOKENIZED_PREFIX}/")
    if source not in TOKENIZED_PARTITIONS:
        known = ", ".join(sorted(TOKENIZED_PARTITIONS))
        raise ValueError(f"{asset!r} is not a tokenized asset; sources: {known}")
    return source


def all_partitions_range(instance: dg.DagsterInstance, source: str) -> tuple[str, str] | None:
    """(first, last) registered partition of ``tokenized/<source>``, or None if it has none."""
    keys = instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[source].name)
    return (keys[0], keys[-1]) if keys else None


def all_partitions_tags(instance: dg.DagsterInstance, source: str) -> dict[str, str]:
    """Run tags that make one run over every registered partition (empty if there are none)."""
    return range_tags(instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[source].name))


def range_tags(keys: Sequence[str]) -> dict[str, str]:
    """Run tags of one run from the first of ``keys`` to the last (empty for no keys)."""
    return {RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]} if keys else {}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hrm-partition-range",
        description="Print FIRST...LAST of a tokenized asset's partitions (DAGSTER_HOME's).",
    )
    parser.add_argument("asset", help="tokenized/<source> (or just <source>)")
    args = parser.parse_args(argv)
    try:
        source = source_of(args.asset)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    bounds = all_partitions_range(dg.DagsterInstance.get(), source)
    if bounds is None:
        print(
            f"error: tokenized/{source} has no partitions yet: one is registered per cleaned "
            f"file of {source} when cleaned/{source} is materialized, or by the sensor "
            "cleaned_files_sensor (running under dagster dev) for files written outside Dagster",
            file=sys.stderr,
        )
        return 1
    print(f"{bounds[0]}...{bounds[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
